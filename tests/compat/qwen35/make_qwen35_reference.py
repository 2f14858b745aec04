#!/usr/bin/python3
"""Makes the Qwen3.5 reference data of tests/compat/qwen35 with llama.cpp as the oracle.

Writes a small qwen35 model (random weights, the vocabulary of ../shared/compat/arch/llama.gguf)
with llama.cpp's Python package gguf in the layout its conversion/qwen.py writes:
three gated DeltaNet layers (attn_qkv, attn_gate, ssm_conv1d, ssm_dt.bias, ssm_a, ssm_alpha,
ssm_beta, ssm_norm, ssm_out) then one gated attention layer (attn_q giving each head's q and
gate, q/k norms, partial NEOX rope with qwen35.rope.dimension_sections), post_attention_norm
before each SwiGLU FFN, and one MTP layer after the trunk (blk.4.nextn.eh_proj, enorm, hnorm,
shared_head_norm; qwen35.nextn_predict_layers = 1). Its output rows of control tokens and of
tokens whose bytes are not UTF-8 on their own are zero, so that greedy text never holds an
incomplete character (this llama-server refuses to return one: it parses every completion):

  qwen35-f16.gguf     matrices f16 (norms and the small ssm tensors f32)
  qwen35-q8_0.gguf    llama-quantize Q8_0 of the f16 file
  qwen35-q4_k_m.gguf  llama-quantize Q4_K_M of the f16 file

Then runs llama.cpp's llama-server on loopback (one slot, greedy, f32 KV caches, flash
attention off; a fresh server for each prompt, since its MTP drafter carries the last hidden
state of one request into the next) and records in qwen35_reference.json, for each file and
prompt, the generated token ids without speculation and, for the f16 file, the tokens its MTP
layer drafts each round with --spec-type draft-mtp (3 drafted tokens a round, p-min 0) and each
round's accepted count.

Usage (a llama.cpp checkout with qwen35 and draft-mtp, and a CPU build of llama-server and
llama-quantize):
  make_qwen35_reference.py --llama-cpp DIR --bin DIR/build/bin
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from llama_server_oracle import (N_PREDICT, PROMPTS, TARGET, complete,  # noqa: E402
                                 copy_tokenizer, new_writer, parse_arguments, rounds_of,
                                 start_server, write_and_close)

N_DRAFT = 3

D, N_FF, N_TRUNK = 256, 256, 4
N_HEAD, N_HEAD_KV, HEAD_DIM, N_ROT = 4, 2, 64, 16
SSM_K_HEADS, SSM_V_HEADS, SSM_DIM, SSM_CONV = 2, 4, 32, 4
# Scales that keep the random model from amplifying rounding: embeddings of unit RMS, layer
# outputs at half, keys near queries (write_model). Its greedy text then holds against the
# rounding of 8-bit activations for most steps; where two tokens are nearly tied a quantized
# run may still take either, which the tests read from the recorded top log-probabilities.
LAYER_OUT = 0.5
TOP = 2  # log-probabilities recorded per generated token


def utf8_tokens(target):
    """Whether each token of the target's GPT-2 byte-level vocabulary is whole UTF-8 text."""
    chars = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) \
        + list(range(ord("\u00ae"), ord("\u00ff") + 1))
    byte_of = {chr(c): c for c in chars}
    extra = 0
    for b in range(256):
        if b not in chars:
            byte_of[chr(256 + extra)] = b
            extra += 1
    types = target.fields["tokenizer.ggml.token_type"].contents()
    whole = []
    for text, kind in zip(target.fields["tokenizer.ggml.tokens"].contents(), types):
        try:
            bytes(byte_of[c] for c in text).decode("utf-8")
            whole.append(kind == 1)
        except (KeyError, UnicodeDecodeError):
            whole.append(False)
    return np.array(whole)


def write_model(gguf, target, path, seed):
    rng = np.random.default_rng(seed)
    n_vocab = int(next(t for t in target.tensors if t.name == "token_embd.weight").shape[1])

    def normal(shape, fan_in, scale=1.0):
        return (scale * rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float16)

    def norm(n):
        return (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    w = new_writer(gguf, path, "qwen35", D, N_TRUNK + 1, N_FF, N_HEAD, N_HEAD_KV)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_dimension_count(N_ROT)
    w.add_rope_dimension_sections([3, 3, 2, 0])
    w.add_rope_freq_base(1e7)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_ssm_conv_kernel(SSM_CONV)
    w.add_ssm_state_size(SSM_DIM)
    w.add_ssm_group_count(SSM_K_HEADS)
    w.add_ssm_time_step_rank(SSM_V_HEADS)
    w.add_ssm_inner_size(SSM_V_HEADS * SSM_DIM)
    w.add_full_attention_interval(4)
    w.add_nextn_predict_layers(1)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    copy_tokenizer(w, target)
    w.add_tensor("token_embd.weight", normal((n_vocab, D), D, 16.0))
    w.add_tensor("output_norm.weight", norm(D))
    output = normal((n_vocab, D), D, 3.0)
    output[~utf8_tokens(target)] = 0
    w.add_tensor("output.weight", output)
    qd, kvd = N_HEAD * HEAD_DIM, N_HEAD_KV * HEAD_DIM
    channels = (2 * SSM_K_HEADS + SSM_V_HEADS) * SSM_DIM
    vd = SSM_V_HEADS * SSM_DIM

    def attention(p):
        w.add_tensor(p + "attn_q.weight", normal((2 * qd, D), D))
        w.add_tensor(p + "attn_k.weight", normal((kvd, D), D))
        w.add_tensor(p + "attn_v.weight", normal((kvd, D), D))
        w.add_tensor(p + "attn_output.weight", normal((D, qd), qd, LAYER_OUT))
        w.add_tensor(p + "attn_q_norm.weight", norm(HEAD_DIM))
        w.add_tensor(p + "attn_k_norm.weight", norm(HEAD_DIM))

    def ffn(p):
        w.add_tensor(p + "post_attention_norm.weight", norm(D))
        w.add_tensor(p + "ffn_gate.weight", normal((N_FF, D), D))
        w.add_tensor(p + "ffn_up.weight", normal((N_FF, D), D))
        w.add_tensor(p + "ffn_down.weight", normal((D, N_FF), N_FF, LAYER_OUT))

    for layer in range(N_TRUNK):
        p = f"blk.{layer}."
        w.add_tensor(p + "attn_norm.weight", norm(D))
        if (layer + 1) % 4 == 0:
            attention(p)
        else:
            # Keys near the queries: a head's output M^T q then never nears zero for all its
            # rows, where the output norm would magnify rounding (random q and k are nearly
            # orthogonal; a trained model's are not).
            qk = (rng.standard_normal((SSM_K_HEADS * SSM_DIM, D)) / np.sqrt(D)).astype(np.float32)
            keys = qk + 0.3 * rng.standard_normal(qk.shape).astype(np.float32) / np.sqrt(D)
            values = rng.standard_normal((SSM_V_HEADS * SSM_DIM, D)) / np.sqrt(D)
            w.add_tensor(p + "attn_qkv.weight",
                         np.concatenate([qk, keys, values]).astype(np.float16))
            w.add_tensor(p + "attn_gate.weight", normal((vd, D), D))
            w.add_tensor(p + "ssm_conv1d.weight",
                         rng.uniform(-0.5, 0.5, (channels, SSM_CONV)).astype(np.float32))
            dt = rng.uniform(0.001, 0.1, SSM_V_HEADS)
            w.add_tensor(p + "ssm_dt.bias", np.log(np.expm1(dt)).astype(np.float32))
            w.add_tensor(p + "ssm_a", (-rng.uniform(1, 16, SSM_V_HEADS)).astype(np.float32))
            w.add_tensor(p + "ssm_alpha.weight", normal((SSM_V_HEADS, D), D))
            w.add_tensor(p + "ssm_beta.weight", normal((SSM_V_HEADS, D), D))
            w.add_tensor(p + "ssm_norm.weight", norm(SSM_DIM))
            w.add_tensor(p + "ssm_out.weight", normal((D, vd), vd, LAYER_OUT))
        ffn(p)
    p = f"blk.{N_TRUNK}."  # the MTP layer: a gated attention block after eh_proj
    w.add_tensor(p + "attn_norm.weight", norm(D))
    attention(p)
    ffn(p)
    w.add_tensor(p + "nextn.eh_proj.weight", normal((D, 2 * D), 2 * D))
    w.add_tensor(p + "nextn.enorm.weight", norm(D))
    w.add_tensor(p + "nextn.hnorm.weight", norm(D))
    w.add_tensor(p + "nextn.shared_head_norm.weight", norm(D))
    write_and_close(w)


def oracle(binary, model, spec, prompt, port, log_path):
    """One prompt on a fresh server: its generated ids, and with MTP its rounds."""
    with open(log_path, "w") as log:
        server = start_server(binary, model, None, spec, N_DRAFT, port, log)
        try:
            out = complete(port, prompt, N_PREDICT, TOP)
            time.sleep(0.2)  # the log lines of the request's end
        finally:
            server.terminate()
            server.wait()
    result = {"prompt": prompt, "prompt_n": out["timings"]["prompt_n"], "tokens": out["tokens"],
              "top_logprobs": [[round(t["logprob"], 5) for t in p["top_logprobs"]]
                               for p in out["completion_probabilities"]]}
    if spec:
        drafts, accepted = rounds_of(Path(log_path).read_text(errors="replace"))
        if len(drafts) != len(accepted):
            sys.exit(f"{model.name}: {len(drafts)} drafts but {len(accepted)} verdicts")
        result.update({"drafts": drafts, "accepted": accepted})
    return result


def main():
    args = parse_arguments(__doc__.split("\n")[0], 18095)
    import gguf  # llama.cpp's own writer, as its converter uses it

    target = gguf.GGUFReader(str(TARGET))
    f16 = HERE / "qwen35-f16.gguf"
    write_model(gguf, target, f16, 35)
    files = {"qwen35-f16.gguf": f16}
    for preset in ("Q8_0", "Q4_K_M"):
        path = HERE / f"qwen35-{preset.lower()}.gguf"
        subprocess.run([str(args.bin / "llama-quantize"), str(f16), str(path), preset], check=True,
                       stdout=subprocess.DEVNULL)
        files[path.name] = path
    reference = {
        "made_with": "llama.cpp llama-server, greedy, f32 KV caches, flash attention off, 2 "
                     "threads, a fresh server per prompt; MTP: --spec-type draft-mtp, "
                     f"{N_DRAFT} drafted tokens a round, p-min 0; drafts = first candidate of "
                     "each draft position",
        "vocabulary": "../shared/compat/arch/llama.gguf",
        "n_predict": N_PREDICT,
        "n_draft": N_DRAFT,
        "plain": {},
        "mtp": {},
    }
    for name, path in files.items():
        reference["plain"][name] = [
            oracle(args.bin / "llama-server", path, None, prompt, args.port,
                   args.log_dir / f"{path.stem}-plain.log") for prompt in PROMPTS]
    reference["mtp"]["qwen35-f16.gguf"] = [
        oracle(args.bin / "llama-server", f16, "draft-mtp", prompt, args.port,
               args.log_dir / "qwen35-mtp.log") for prompt in PROMPTS]
    (HERE / "qwen35_reference.json").write_text(json.dumps(reference, indent=1) + "\n")


if __name__ == "__main__":
    main()
