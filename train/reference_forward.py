#!/usr/bin/python3
"""Reference forward pass for specd / llama GGUF files (float32 PyTorch, F16 weights upcast).

  reference_forward.py MODEL.gguf --tokens 1,2,3 [--hidden]
      model (llama, qwen2, qwen3, phi3, qwen3moe, gpt-oss): prints {"logits": [[V floats]
      per position]} (+ "hidden": the last-layer hidden state BEFORE output_norm, [[d floats]
      per position], with --hidden).
  reference_forward.py MODEL.gguf --tokenize "text" [--add-bos]
      prints {"tokens": [ids]} using the tokenizer stored in the GGUF metadata
      (no BOS unless --add-bos).
  reference_forward.py HEAD.gguf --target TARGET.gguf --tokens x0,x1,...,x{T-1}
      head files (specd-medusa / specd-eagle / specd-mtp); --target defaults to target.gguf
      next to the head. The target is run on all T tokens (positions 0..T-1), then:
      medusa: {"logits": [K][T][V]}  head k (0-based) at position t predicts token t+k+2
      eagle:  {"logits": [T-1][V], "features": [T-1][d]} element t (0..T-2) is built from the
              target feature f_t and token x_{t+1}, RoPE position t; its output feature
              predicts f_{t+1}, its logits predict token x_{t+2}
      mtp:    {"logits": [T-1][V], "hidden": [T-1][d]} element t from h_t and x_{t+1},
              RoPE position t; logits predict token x_{t+2}
      The head's digest must match the target (error otherwise).
  --check: run and validate (finite values, digest match) and print a one-line summary.
"""
import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from train.gguf import GGUFReader  # noqa: E402
from train.export import ARCHITECTURES, load_llama, load_head, target_digest, tokenizer_from_meta  # noqa: E402


def rows(t):
    return [[float(v) for v in r] for r in t.tolist()] if t.dim() == 2 else [rows(x) for x in t]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--tokens")
    ap.add_argument("--tokenize")
    ap.add_argument("--add-bos", action="store_true")
    ap.add_argument("--hidden", action="store_true")
    ap.add_argument("--target")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("SPECD_TRAIN_THREADS", "1")))
    r = GGUFReader(a.model)
    arch = r.meta["general.architecture"]
    if a.tokenize is not None:
        src = r
        if "tokenizer.ggml.tokens" not in r.meta:
            src = GGUFReader(a.target or os.path.join(os.path.dirname(a.model), "target.gguf"))
        tok = tokenizer_from_meta(src.meta)
        print(json.dumps({"tokens": tok.encode(a.tokenize, add_bos=a.add_bos)}))
        return
    ids = [int(x) for x in (a.tokens or "0").split(",") if x.strip()]
    x = torch.tensor([ids], dtype=torch.long)
    out = {}
    with torch.no_grad():
        if arch in ARCHITECTURES:
            m, _ = load_llama(a.model)
            logits, hid = m(x, return_hidden=True)
            out["logits"] = rows(logits[0])
            if a.hidden:
                out["hidden"] = rows(hid[0])
        else:
            tpath = a.target or os.path.join(os.path.dirname(os.path.abspath(a.model)), "target.gguf")
            t, tr = load_llama(tpath)
            if r.meta["specd.target.digest"] != target_digest(tr):
                sys.exit(f"error: {a.model} was trained for target {r.meta['specd.target.name']} "
                         f"(digest {r.meta['specd.target.digest']}), not {tpath}")
            kind, h, c, _ = load_head(a.model)
            _, hid = t(x, return_hidden=True)
            if kind == "medusa":
                outs = h(t.norm(hid))
                out["logits"] = [rows(t.head(rr)[0]) for rr in outs]
            else:
                if len(ids) < 2:
                    sys.exit("error: eagle/mtp need at least 2 tokens")
                o = h(hid[:, :-1], t.tok_embd(x[:, 1:]))
                out["logits"] = rows(t.head(t.norm(o))[0])
                out["features" if kind == "eagle" else "hidden"] = rows(o[0])
    if a.check:
        flat = out["logits"]
        while isinstance(flat[0], list):
            flat = [v for row in flat for v in row]
        ok = all(math.isfinite(v) for v in flat)
        print(f"{a.model}: arch {arch}, {len(r.tensors)} tensors, logits finite={ok}")
        sys.exit(0 if ok else 1)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
