#!/usr/bin/python3
"""Makes the EAGLE-3 reference data of tests/compat/eagle3 with llama.cpp as the oracle.

Writes two EAGLE-3 heads (random weights, f32) for ../shared/compat/arch/llama.gguf with
llama.cpp's Python package gguf, in the layout its convert_hf_to_gguf.py writes (general.
architecture "eagle3", fc.weight, blk.0.attn_norm_2.weight, eagle3.target_layers, ...):

  eagle3-shared.gguf  borrows the target's token_embd and output (same vocabulary);
  eagle3-d2t.gguf     has its own token_embd and a 64-token output with a d2t table.

Then serves each head with llama.cpp's llama-server on loopback (--spec-type draft-eagle3,
greedy, 4 drafted tokens a round, no confidence cut-off, f32 KV caches, no flash attention;
its llama-speculative-simple does not feed EAGLE-3 the target's features) and records, in
eagle3_reference.json, for each prompt: the generated token ids, the tokens drafted each
round (the first candidate of each draft position in its debug log), the accepted count of
each round and the totals of its timings.

Usage (a llama.cpp checkout with eagle3 support and a CPU build of its examples):
  make_eagle3_reference.py --llama-cpp DIR --bin DIR/build/bin
"""
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from llama_server_oracle import (N_PREDICT, PROMPTS, TARGET, add_swiglu_ffn,  # noqa: E402
                                 copy_tokenizer, new_writer, parse_arguments, run_oracle,
                                 write_and_close)

N_DRAFT = 4


def write_head(gguf, target, path, seed, own_vocab):
    rng = np.random.default_rng(seed)
    d = int(target.fields["llama.embedding_length"].parts[-1][0])
    n_layer = int(target.fields["llama.block_count"].parts[-1][0])
    t_embd = next(t for t in target.tensors if t.name == "token_embd.weight")
    n_vocab = int(t_embd.shape[1])
    n_head, n_head_kv, n_ff = 4, 2, 256
    head_dim = d // n_head

    def normal(shape, fan_in):
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    def norm(n):
        return (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w = new_writer(gguf, path, "eagle3", d, 1, n_ff, n_head, n_head_kv)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_vocab_size(n_vocab)
    w.add_target_layers([0, 1, n_layer - 1])
    w.add_target_hidden_size(d)
    w.add_norm_before_residual(False)
    copy_tokenizer(w, target)  # the converter copies the target's tokenizer into the head
    w.add_tensor("fc.weight", normal((d, 3 * d), 3 * d))
    w.add_tensor("output_norm.weight", norm(d))
    if own_vocab:
        draft_vocab = 64
        ids = np.sort(rng.choice(n_vocab, size=draft_vocab, replace=False)).astype(np.int64)
        w.add_tensor("token_embd.weight", normal((n_vocab, d), 1).astype(np.float16))
        w.add_tensor("output.weight", normal((draft_vocab, d), d) * 4)
        w.add_tensor("d2t", ids, raw_dtype=gguf.GGMLQuantizationType.I64)
    p = "blk.0."
    w.add_tensor(p + "attn_norm.weight", norm(d))
    w.add_tensor(p + "attn_norm_2.weight", norm(d))
    w.add_tensor(p + "attn_q.weight", normal((n_head * head_dim, 2 * d), 2 * d))
    w.add_tensor(p + "attn_k.weight", normal((n_head_kv * head_dim, 2 * d), 2 * d))
    w.add_tensor(p + "attn_v.weight", normal((n_head_kv * head_dim, 2 * d), 2 * d))
    w.add_tensor(p + "attn_output.weight", normal((d, n_head * head_dim), n_head * head_dim))
    add_swiglu_ffn(w, p, d, n_ff, normal, norm)
    write_and_close(w)


def main():
    args = parse_arguments(__doc__.split("\n")[0], 18093)
    import gguf  # llama.cpp's own writer, as its converter uses it

    target = gguf.GGUFReader(str(TARGET))
    heads = {"eagle3-shared.gguf": (1, False), "eagle3-d2t.gguf": (2, True)}
    reference = {
        "made_with": "llama.cpp llama-server --spec-type draft-eagle3, greedy, "
                     f"{N_DRAFT} drafted tokens a round, p-min 0, f32 KV caches, flash attention "
                     "off, 2 threads; drafts = first candidate of each draft position",
        "target": "../shared/compat/arch/llama.gguf",
        "n_predict": N_PREDICT,
        "n_draft": N_DRAFT,
        "heads": {},
    }
    for name, (seed, own_vocab) in heads.items():
        path = HERE / name
        write_head(gguf, target, path, seed, own_vocab)
        reference["heads"][name] = run_oracle(args.bin / "llama-server", TARGET, path,
                                              "draft-eagle3", N_DRAFT, PROMPTS, N_PREDICT,
                                              args.port, args.log_dir / (path.stem + ".log"))
    (HERE / "eagle3_reference.json").write_text(json.dumps(reference, indent=1) + "\n")


if __name__ == "__main__":
    main()
