"""Train the tokenizer on the train split and tokenize every split into uint16 arrays.

Each file becomes <s> + tokens(file) + </s>; files are concatenated in manifest order.
Outputs (in --out, default train/work/data):
  tokenizer.json
  {train,validation,heldout}_{code,prose}.npy   (uint16 token streams)
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from train import corpus, tokenizer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="train/work/data")
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--max-files", type=int, default=0, help="smoke: use only N files per split/domain")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()

    def fl(split, dom):
        f = corpus.files(split, dom)
        return f[:a.max_files] if a.max_files else f

    texts = [corpus.read_text(p) for d in ("code", "prose") for p in fl("train", d)]
    merges = tokenizer.train_bpe(texts, a.vocab_size)
    tok = tokenizer.Tokenizer.from_merges(merges)
    tok.save(os.path.join(a.out, "tokenizer.json"))
    print(f"tokenizer: vocab {tok.vocab_size}, {len(merges)} merges, {time.time()-t0:.1f}s", flush=True)
    stats = {}
    for split in corpus.SPLITS:
        for d in ("code", "prose"):
            ids = []
            nbytes = 0
            for p in fl(split, d):
                t = corpus.read_text(p)
                nbytes += len(t.encode("utf-8"))
                ids.append(tok.bos_id)
                ids.extend(tok.encode(t))
                ids.append(tok.eos_id)
            arr = np.array(ids, dtype=np.uint16)
            np.save(os.path.join(a.out, f"{split}_{d}.npy"), arr)
            stats[f"{split}_{d}"] = (len(arr), nbytes)
            print(f"{split}_{d}: {len(arr)} tokens, {nbytes} bytes, "
                  f"{nbytes/max(1,len(arr)):.2f} bytes/token", flush=True)
    print(f"done in {time.time()-t0:.1f}s")


if __name__ == "__main__":
    main()
