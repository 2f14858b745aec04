"""Corpus definition and the fixed train / validation / held-out split.

Two domains:
  code  - every *.py file under /usr/lib/python3.11 (Debian package libpython3.11-stdlib
          and friends), relative path taken from /usr/lib/python3.11.
  prose - every *.rst.txt file under /usr/share/doc/python3.11/html/_sources
          (Debian package python3.11-doc), relative path taken from that directory.

Split rule (by file, deterministic):
  h = int(sha256(f"{domain}/{relpath}".encode()).hexdigest()[:8], 16) % 100
  h < 90 -> train, 90 <= h < 95 -> validation, h >= 95 -> heldout

CLI:
  /usr/bin/python3 train/corpus.py --write-manifest        # writes train/corpus/split.json
  /usr/bin/python3 train/corpus.py --heldout code|prose|all   # absolute paths, one per line
  /usr/bin/python3 train/corpus.py --split validation --domain prose
"""
import argparse
import hashlib
import json
import os
import sys

ROOTS = {
    "code": ("/usr/lib/python3.11", ".py"),
    "prose": ("/usr/share/doc/python3.11/html/_sources", ".rst.txt"),
}
SPLITS = ("train", "validation", "heldout")
HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "corpus", "split.json")


def split_of(domain, relpath):
    h = int(hashlib.sha256(f"{domain}/{relpath}".encode("utf-8")).hexdigest()[:8], 16) % 100
    if h < 90:
        return "train"
    if h < 95:
        return "validation"
    return "heldout"


def scan(domain):
    root, ext = ROOTS[domain]
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(ext):
                full = os.path.join(dirpath, fn)
                if os.path.isfile(full) and not os.path.islink(full):
                    out.append(os.path.relpath(full, root))
    return sorted(out)


def build_manifest():
    man = {"rule": "h = int(sha256(domain + '/' + relpath).hexdigest()[:8], 16) % 100; "
                   "h<90 train, h<95 validation, else heldout",
           "roots": {d: ROOTS[d][0] for d in ROOTS}, "splits": {}}
    for d in ROOTS:
        for s in SPLITS:
            man["splits"].setdefault(s, {})[d] = []
        for rel in scan(d):
            man["splits"][split_of(d, rel)][d].append(rel)
    return man


def load_manifest():
    if os.path.exists(MANIFEST):
        with open(MANIFEST) as f:
            return json.load(f)
    return build_manifest()


def files(split, domain):
    """Absolute paths of the files of one split and domain ('code' or 'prose')."""
    man = load_manifest()
    root = man["roots"][domain]
    return [os.path.join(root, r) for r in man["splits"][split][domain]]


def heldout_files(domain):
    """Held-out files (absolute paths) for 'code' or 'prose'; benchmarks draw prompts from these only."""
    return files("heldout", domain)


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write-manifest", action="store_true")
    ap.add_argument("--heldout", choices=["code", "prose", "all"])
    ap.add_argument("--split", choices=SPLITS)
    ap.add_argument("--domain", choices=["code", "prose", "all"], default="all")
    a = ap.parse_args()
    if a.write_manifest:
        man = build_manifest()
        os.makedirs(os.path.dirname(MANIFEST), exist_ok=True)
        with open(MANIFEST, "w") as f:
            json.dump(man, f, indent=1, sort_keys=True)
            f.write("\n")
        for s in SPLITS:
            print(s, {d: len(man["splits"][s][d]) for d in ROOTS})
        return
    split, domain = ("heldout", a.heldout) if a.heldout else (a.split, a.domain)
    if split is None:
        ap.print_help()
        sys.exit(2)
    for d in (["code", "prose"] if domain == "all" else [domain]):
        for p in files(split, d):
            print(p)


if __name__ == "__main__":
    main()
