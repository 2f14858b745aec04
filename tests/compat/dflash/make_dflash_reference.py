#!/usr/bin/python3
"""Makes the DFlash reference data of tests/compat/dflash with llama.cpp as the oracle.

Writes a DFlash block drafter (random weights, f32) for ../shared/compat/arch/llama.gguf with
llama.cpp's Python package gguf, in the layout its converter writes for a DFlashDraftModel
(general.architecture "dflash": fc.weight over the target layers' inputs, enc.output_norm,
Qwen3-style decoder layers with per-head q/k norms, no token_embd or output of its own,
dflash.block_size, dflash.target_layers, the target's tokenizer with a mask token), then
serves it with llama.cpp's llama-server (--spec-type draft-dflash, greedy, 4 drafted tokens
a round; llama_server_oracle.py) and records, in dflash_reference.json, for each prompt: the
generated token ids, the tokens drafted each round, the accepted count of each round.

Usage (a llama.cpp checkout with DFlash support and a CPU build of its server):
  make_dflash_reference.py --llama-cpp DIR --bin DIR/build/bin
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
BLOCK_SIZE = 8


def write_drafter(gguf, target, path, seed):
    rng = np.random.default_rng(seed)
    d = int(target.fields["llama.embedding_length"].parts[-1][0])
    n_layer_target = int(target.fields["llama.block_count"].parts[-1][0])
    t_embd = next(t for t in target.tensors if t.name == "token_embd.weight")
    n_vocab = int(t_embd.shape[1])
    n_layer, n_head, n_head_kv, n_ff = 2, 4, 2, 256
    head_dim = d // n_head
    layers = [0, n_layer_target - 1]  # inputs of these target layers, as the converter's ids + 1

    def normal(shape, fan_in):
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    def norm(n):
        return (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w = new_writer(gguf, path, "dflash", d, n_layer, n_ff, n_head, n_head_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_block_size(BLOCK_SIZE)
    w.add_target_layers(layers)
    copy_tokenizer(w, target)  # the converter copies the target's tokenizer
    w.add_mask_token_id(n_vocab - 1)
    w.add_tensor("fc.weight", normal((d, len(layers) * d), len(layers) * d))
    w.add_tensor("enc.output_norm.weight", norm(d))
    w.add_tensor("output_norm.weight", norm(d))
    for i in range(n_layer):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", norm(d))
        w.add_tensor(p + "attn_q.weight", normal((n_head * head_dim, d), d))
        w.add_tensor(p + "attn_k.weight", normal((n_head_kv * head_dim, d), d))
        w.add_tensor(p + "attn_v.weight", normal((n_head_kv * head_dim, d), d))
        w.add_tensor(p + "attn_output.weight", normal((d, n_head * head_dim), n_head * head_dim))
        w.add_tensor(p + "attn_q_norm.weight", norm(head_dim))
        w.add_tensor(p + "attn_k_norm.weight", norm(head_dim))
        add_swiglu_ffn(w, p, d, n_ff, normal, norm)
    write_and_close(w)


def main():
    args = parse_arguments(__doc__.split("\n")[0], 18094)
    import gguf  # llama.cpp's own writer, as its converter uses it

    target = gguf.GGUFReader(str(TARGET))
    path = HERE / "dflash.gguf"
    write_drafter(gguf, target, path, seed=3)
    reference = {
        "made_with": "llama.cpp llama-server --spec-type draft-dflash, greedy, "
                     f"{N_DRAFT} drafted tokens a round, p-min 0, f32 KV caches, flash attention "
                     "off, 2 threads; drafts = first candidate of each draft position",
        "target": "../shared/compat/arch/llama.gguf",
        "drafter": path.name,
        "n_predict": N_PREDICT,
        "n_draft": N_DRAFT,
        "prompts": run_oracle(args.bin / "llama-server", TARGET, path, "draft-dflash", N_DRAFT,
                              PROMPTS, N_PREDICT, args.port, args.log_dir / "dflash.log"),
    }
    (HERE / "dflash_reference.json").write_text(json.dumps(reference, indent=1) + "\n")


if __name__ == "__main__":
    main()
