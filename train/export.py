"""GGUF export / import for the llama target and drafts and for the specd heads."""
import hashlib
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from train.gguf import GGUFWriter, GGUFReader, I32, U32, F32, T_INT32  # noqa: E402
from train.model import LlamaConfig, Llama, Block  # noqa: E402
from train.tokenizer import Tokenizer  # noqa: E402

BLOCK_MAP = [  # (torch suffix in Block, gguf suffix)
    ("attn_norm.weight", "attn_norm.weight"),
    ("attn.wq.weight", "attn_q.weight"),
    ("attn.wk.weight", "attn_k.weight"),
    ("attn.wv.weight", "attn_v.weight"),
    ("attn.wo.weight", "attn_output.weight"),
    ("ffn_norm.weight", "ffn_norm.weight"),
    ("ffn.w_gate.weight", "ffn_gate.weight"),
    ("ffn.w_up.weight", "ffn_up.weight"),
    ("ffn.w_down.weight", "ffn_down.weight"),
]


def _np(t):
    return t.detach().cpu().float().numpy()


def add_tokenizer(w: GGUFWriter, tok: Tokenizer):
    w.add("tokenizer.ggml.model", "gpt2")
    w.add("tokenizer.ggml.pre", "gpt-2")
    w.add("tokenizer.ggml.tokens", tok.tokens)
    w.add("tokenizer.ggml.token_type", [I32(t) for t in tok.token_types], T_INT32)
    w.add("tokenizer.ggml.merges", [a + " " + b for a, b in tok.merges])
    w.add("tokenizer.ggml.bos_token_id", U32(tok.bos_id))
    w.add("tokenizer.ggml.eos_token_id", U32(tok.eos_id))
    w.add("tokenizer.ggml.add_bos_token", True)
    w.add("tokenizer.ggml.add_eos_token", False)


def add_block(w, prefix, block: Block):
    sd = block.state_dict()
    for ts, gs in BLOCK_MAP:
        w.add_tensor(f"{prefix}.{gs}", _np(sd[ts]))


def add_block_hparams(w, arch, c: LlamaConfig, n_blocks):
    w.add(f"{arch}.context_length", U32(c.context_length))
    w.add(f"{arch}.embedding_length", U32(c.dim))
    w.add(f"{arch}.block_count", U32(n_blocks))
    w.add(f"{arch}.feed_forward_length", U32(c.ffn_dim))
    w.add(f"{arch}.attention.head_count", U32(c.n_heads))
    w.add(f"{arch}.attention.head_count_kv", U32(c.n_kv_heads))
    w.add(f"{arch}.rope.freq_base", F32(c.rope_base))
    w.add(f"{arch}.rope.dimension_count", U32(c.head_dim))
    w.add(f"{arch}.attention.layer_norm_rms_epsilon", F32(c.norm_eps))
    w.add(f"{arch}.vocab_size", U32(c.vocab_size))


def export_llama(model: Llama, tok: Tokenizer, name, path):
    c = model.c
    w = GGUFWriter()
    w.add("general.architecture", "llama")
    w.add("general.name", name)
    w.add("general.file_type", U32(1))
    w.add("general.alignment", U32(32))
    add_block_hparams(w, "llama", c, c.n_layers)
    add_tokenizer(w, tok)
    w.add_tensor("token_embd.weight", _np(model.tok_embd.weight))
    for i, b in enumerate(model.blocks):
        add_block(w, f"blk.{i}", b)
    w.add_tensor("output_norm.weight", _np(model.norm.weight))
    if model.output is not None:
        w.add_tensor("output.weight", _np(model.output.weight))
    w.write(path)


def config_from_meta(m, arch="llama"):
    nh = int(m[f"{arch}.attention.head_count"])
    return LlamaConfig(
        vocab_size=int(m.get(f"{arch}.vocab_size", 0)),  # load_llama: token_embd's rows
        dim=int(m[f"{arch}.embedding_length"]),
        n_layers=int(m[f"{arch}.block_count"]),
        n_heads=nh,
        n_kv_heads=int(m.get(f"{arch}.attention.head_count_kv", nh)),
        ffn_dim=int(m[f"{arch}.feed_forward_length"]),
        context_length=int(m[f"{arch}.context_length"]),
        rope_base=float(m.get(f"{arch}.rope.freq_base", 10000.0)),
        norm_eps=float(m[f"{arch}.attention.layer_norm_rms_epsilon"]),
        tie_embeddings=False,
    )


def _t(r, name):
    return torch.from_numpy(r.f32(name).copy())


def load_block(block: Block, r: GGUFReader, prefix):
    sd = {ts: _t(r, f"{prefix}.{gs}") for ts, gs in BLOCK_MAP}
    block.load_state_dict(sd)


# The model architectures load_llama reads, with what each adds to the llama block, written
# from llama.cpp's conventions independently of specd's C++ (core/models/architectures/).
ARCHITECTURES = {
    "llama": dict(rope_neox=False),  # optional q/k/v biases and rope_freqs.weight
    "qwen2": dict(rope_neox=True, qkv_bias=True),
    "qwen3": dict(rope_neox=True, qk_norm=True),
    "phi3": dict(rope_neox=True),  # fused attn_qkv and gate+up ffn_up tensors
    "qwen3moe": dict(rope_neox=True, qk_norm=True),  # ffn_gate_inp and *_exps experts
    # attn_output.bias, attn_sinks, post_attention_norm as the FFN norm, biased experts; its
    # head size is attention.key_length, its even layers attend attention.sliding_window keys.
    "gpt-oss": dict(rope_neox=True, qkv_bias=True, out_bias=True, attn_sinks=True,
                    expert_biases=True, swiglu_limit=7.0),
}


def _load_arch_block(block: Block, r: GGUFReader, prefix, c: LlamaConfig):
    """Like load_block, for any layout of ARCHITECTURES: fused tensors are split (attn_qkv:
    q rows, then k, then v; ffn_up: the gate's rows, then up's)."""
    def has(name):
        return f"{prefix}.{name}" in r.tensors

    ffn_norm = "post_attention_norm" if has("post_attention_norm.weight") else "ffn_norm"
    sd = {"attn_norm.weight": _t(r, f"{prefix}.attn_norm.weight"),
          "attn.wo.weight": _t(r, f"{prefix}.attn_output.weight"),
          "ffn_norm.weight": _t(r, f"{prefix}.{ffn_norm}.weight")}
    if c.out_bias:
        sd["attn.wo.bias"] = _t(r, f"{prefix}.attn_output.bias")
    if c.attn_sinks:
        sd["attn.sinks"] = _t(r, f"{prefix}.attn_sinks.weight")
    q, kv = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    if has("attn_qkv.weight"):
        w = _t(r, f"{prefix}.attn_qkv.weight")
        sd["attn.wq.weight"], sd["attn.wk.weight"], sd["attn.wv.weight"] = \
            w[:q], w[q:q + kv], w[q + kv:]
    else:
        for n in "qkv":
            sd[f"attn.w{n}.weight"] = _t(r, f"{prefix}.attn_{n}.weight")
    if c.qkv_bias:
        for n in "qkv":
            sd[f"attn.w{n}.bias"] = _t(r, f"{prefix}.attn_{n}.bias")
    if c.qk_norm:
        sd["attn.q_norm.weight"] = _t(r, f"{prefix}.attn_q_norm.weight")
        sd["attn.k_norm.weight"] = _t(r, f"{prefix}.attn_k_norm.weight")
    if c.n_experts:
        sd["ffn.router.weight"] = _t(r, f"{prefix}.ffn_gate_inp.weight")
        if has("ffn_gate_up_exps.weight"):  # [E, 2F, d]: each expert's gate rows, then its up
            both = _t(r, f"{prefix}.ffn_gate_up_exps.weight")
            sd["ffn.gate"], sd["ffn.up"] = both.chunk(2, dim=1)
        for n in ("gate", "up", "down"):
            if f"ffn.{n}" not in sd:
                sd[f"ffn.{n}"] = _t(r, f"{prefix}.ffn_{n}_exps.weight")
            if c.expert_biases:
                sd[f"ffn.{n}_bias"] = _t(r, f"{prefix}.ffn_{n}_exps.bias")
        if c.expert_biases:
            sd["ffn.router.bias"] = _t(r, f"{prefix}.ffn_gate_inp.bias")
        block.load_state_dict(sd)
        return
    sd["ffn.w_down.weight"] = _t(r, f"{prefix}.ffn_down.weight")
    up = _t(r, f"{prefix}.ffn_up.weight")
    if has("ffn_gate.weight"):
        sd["ffn.w_gate.weight"], sd["ffn.w_up.weight"] = _t(r, f"{prefix}.ffn_gate.weight"), up
    else:
        f = up.shape[0] // 2
        sd["ffn.w_gate.weight"], sd["ffn.w_up.weight"] = up[:f], up[f:]
    block.load_state_dict(sd)


def load_llama(path):
    """Load a model GGUF of any of ARCHITECTURES into a float32 torch Llama (f16 weights
    upcast)."""
    r = GGUFReader(path)
    arch = r.meta["general.architecture"]
    if arch not in ARCHITECTURES:
        raise SystemExit(f"error: {path}: architecture '{arch}' is not one of "
                         f"{', '.join(ARCHITECTURES)}")
    c = config_from_meta(r.meta, arch)
    c.vocab_size = int(r.tensors["token_embd.weight"]["ne"][1])
    c.tie_embeddings = "output.weight" not in r.tensors
    for key, value in ARCHITECTURES[arch].items():
        setattr(c, key, value)
    if arch == "llama" and "blk.0.attn_q.bias" in r.tensors:
        c.qkv_bias = True
    c.key_length = int(r.meta.get(f"{arch}.attention.key_length", 0))
    if any(n.endswith(".ffn_gate_inp.weight") for n in r.tensors):
        c.n_experts = int(r.meta[f"{arch}.expert_count"])
        c.n_experts_used = int(r.meta[f"{arch}.expert_used_count"])
        c.expert_ffn_dim = int(r.meta[f"{arch}.expert_feed_forward_length"])
    if arch == "gpt-oss":
        c.sliding_window = int(r.meta[f"{arch}.attention.sliding_window"])
    scaling = r.meta.get(f"{arch}.rope.scaling.type", "linear")
    factor = float(r.meta.get(f"{arch}.rope.scaling.factor",
                              r.meta.get(f"{arch}.rope.scale_linear", 0.0)))
    if scaling not in ("none", "linear", "yarn"):
        raise SystemExit(f"error: {path}: rope scaling '{scaling}' is not supported")
    c.rope_freq_scale = 1.0 / factor if scaling != "none" and factor > 0 else 1.0
    if scaling == "yarn" and factor > 0:
        c.rope_yarn_orig_ctx = int(r.meta.get(f"{arch}.rope.scaling.original_context_length",
                                              c.context_length))
        c.rope_yarn_betas = (float(r.meta.get(f"{arch}.rope.scaling.yarn_beta_fast", 32.0)),
                             float(r.meta.get(f"{arch}.rope.scaling.yarn_beta_slow", 1.0)))
    m = Llama(c)
    with torch.no_grad():
        m.tok_embd.weight.copy_(_t(r, "token_embd.weight"))
        for i, b in enumerate(m.blocks):
            _load_arch_block(b, r, f"blk.{i}", c)
        m.norm.weight.copy_(_t(r, "output_norm.weight"))
        if m.output is not None:
            m.output.weight.copy_(_t(r, "output.weight"))
        if "rope_freqs.weight" in r.tensors:
            m.rope_factors = _t(r, "rope_freqs.weight")
    m.eval()
    return m, r


def tokenizer_from_meta(m):
    return Tokenizer(m["tokenizer.ggml.tokens"], m["tokenizer.ggml.merges"],
                     list(m["tokenizer.ggml.token_type"]))


def target_digest(target_reader: GGUFReader):
    """sha256 (lowercase hex) of the raw bytes of the target's token_embd.weight tensor
    data exactly as stored in the target GGUF (ne0*ne1 little-endian F16 values, no
    padding)."""
    return hashlib.sha256(target_reader.tensors["token_embd.weight"]["raw"]).hexdigest()


def _head_common(w, arch, name, target_reader):
    w.add("general.architecture", arch)
    w.add("general.name", name)
    w.add("general.file_type", U32(1))
    w.add("general.alignment", U32(32))
    w.add("specd.target.name", target_reader.meta["general.name"])
    w.add("specd.target.digest", target_digest(target_reader))


def export_medusa(heads, c: LlamaConfig, name, target_reader, path):
    arch = "specd-medusa"
    w = GGUFWriter()
    _head_common(w, arch, name, target_reader)
    w.add(f"{arch}.head_count", U32(len(heads.fc)))
    w.add(f"{arch}.embedding_length", U32(c.dim))
    w.add(f"{arch}.vocab_size", U32(c.vocab_size))
    for i, l in enumerate(heads.fc):
        w.add_tensor(f"medusa.{i}.fc.weight", _np(l.weight))
        w.add_tensor(f"medusa.{i}.fc.bias", _np(l.bias))
    w.write(path)


def _one_block_head(arch, m, name, target_reader):
    """A writer holding a one-block head's common metadata and block hyperparameters."""
    w = GGUFWriter()
    _head_common(w, arch, name, target_reader)
    add_block_hparams(w, arch, m.c, 1)
    return w


def export_eagle(m, name, target_reader, path):
    w = _one_block_head("specd-eagle", m, name, target_reader)
    w.add_tensor("eagle.fc.weight", _np(m.fc.weight))
    w.add_tensor("eagle.fc.bias", _np(m.fc.bias))
    add_block(w, "eagle.blk.0", m.block)
    w.write(path)


def export_mtp(m, name, target_reader, path):
    arch = "specd-mtp"
    w = _one_block_head(arch, m, name, target_reader)
    w.add(f"{arch}.predict_offset", U32(2))
    w.add_tensor("mtp.hnorm.weight", _np(m.hnorm.weight))
    w.add_tensor("mtp.enorm.weight", _np(m.enorm.weight))
    w.add_tensor("mtp.eh_proj.weight", _np(m.fc.weight))
    add_block(w, "mtp.blk.0", m.block)
    w.write(path)


def load_head(path):
    """Returns (kind, module, config, reader)."""
    from train.model import MedusaHeads, FusedBlockModel
    r = GGUFReader(path)
    arch = r.meta["general.architecture"]
    if arch == "specd-medusa":
        n = int(r.meta[f"{arch}.head_count"])
        d = int(r.meta[f"{arch}.embedding_length"])
        m = MedusaHeads(d, n)
        with torch.no_grad():
            for i, l in enumerate(m.fc):
                l.weight.copy_(_t(r, f"medusa.{i}.fc.weight"))
                l.bias.copy_(_t(r, f"medusa.{i}.fc.bias"))
        return "medusa", m.eval(), None, r
    c = config_from_meta(r.meta, arch)
    if arch == "specd-eagle":
        m = FusedBlockModel(c, input_norms=False, fc_bias=True)
        with torch.no_grad():
            m.fc.weight.copy_(_t(r, "eagle.fc.weight"))
            m.fc.bias.copy_(_t(r, "eagle.fc.bias"))
        load_block(m.block, r, "eagle.blk.0")
        return "eagle", m.eval(), c, r
    if arch == "specd-mtp":
        m = FusedBlockModel(c, input_norms=True, fc_bias=False)
        with torch.no_grad():
            m.hnorm.weight.copy_(_t(r, "mtp.hnorm.weight"))
            m.enorm.weight.copy_(_t(r, "mtp.enorm.weight"))
            m.fc.weight.copy_(_t(r, "mtp.eh_proj.weight"))
        load_block(m.block, r, "mtp.blk.0")
        return "mtp", m.eval(), c, r
    raise ValueError(f"unknown architecture {arch}")
