"""PyTorch models: llama target/draft, Medusa-1 heads, EAGLE-1 head, MTP module.

RoPE is implemented directly in llama.cpp's `llama` (LLAMA_ROPE_TYPE_NORM) layout:
within each head the rotated pairs are ADJACENT elements (2i, 2i+1), with
theta_i = freq_base^(-2i/head_dim), i = 0 .. head_dim/2-1, angle = pos * theta_i:
    out[2i]   = x[2i] * cos - x[2i+1] * sin
    out[2i+1] = x[2i] * sin + x[2i+1] * cos
so Q/K weights are exported to GGUF with no permutation.
"""
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaConfig:
    vocab_size: int = 4096
    dim: int = 256
    n_layers: int = 4
    n_heads: int = 8
    n_kv_heads: int = 4
    ffn_dim: int = 704
    context_length: int = 512
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    tie_embeddings: bool = False
    # Architecture variants (llama.cpp's qwen2, qwen3, phi3, gpt-oss and llama 3.1 layouts);
    # the defaults are the plain llama block that the shipped models use.
    key_length: int = 0           # head dim when not dim // n_heads (qwen3)
    rope_neox: bool = False       # rotate pairs (i, i + hd/2) instead of (2i, 2i+1)
    qkv_bias: bool = False        # biases on the q, k, v projections (qwen2)
    qk_norm: bool = False         # RMSNorm over each head of q and k before RoPE (qwen3)
    rope_freq_scale: float = 1.0  # linear rope scaling: every angle times this
    rope_yarn_orig_ctx: int = 0   # > 0: YaRN over rope_freq_scale, this the original context
    rope_yarn_betas: tuple = (32.0, 1.0)  # YaRN's beta_fast, beta_slow: its ramp's corners
    out_bias: bool = False        # a bias on the attention's output projection (gpt-oss)
    attn_sinks: bool = False      # a learned sink logit per head in the softmax (gpt-oss)
    sliding_window: int = 0       # > 0: the even layers attend only their last this many keys
    # A mixture of experts (qwen3moe) in place of the FFN: experts, experts per token, their size.
    n_experts: int = 0
    n_experts_used: int = 0
    expert_ffn_dim: int = 0
    expert_biases: bool = False   # biases on the router and the experts' matrices (gpt-oss)
    swiglu_limit: float = 0.0     # > 0: gpt-oss's clamped SwiGLU (see MoeFeedForward)

    @property
    def head_dim(self):
        return self.key_length or self.dim // self.n_heads

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_cache(head_dim, positions, base, factors=None, freq_scale=1.0, yarn_orig_ctx=0,
               yarn_betas=(32.0, 1.0)):
    """positions: LongTensor [T] -> cos, sin of shape [T, head_dim/2]. Pair i turns by
    pos * freq_scale * base^(-2i/head_dim) / factors[i] (factors: llama 3.1's rope_freqs).
    With yarn_orig_ctx, YaRN as ggml's rope_yarn (ext_factor 1, yarn_betas beta_fast, beta_slow):
    pair i mixes the scaled angle and the unscaled one by a ramp between two corner pairs,
    and cos and sin grow by 1 + 0.1 ln(1 / freq_scale)."""
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    if factors is not None:
        inv = inv / factors.to(torch.float64)
    scaled, mscale = inv * freq_scale, 1.0
    if yarn_orig_ctx:
        def corner(beta):  # the pair that turns beta times over the original context
            return head_dim * math.log(yarn_orig_ctx / (2 * math.pi * beta)) / (2 * math.log(base))
        fast, slow = yarn_betas
        lo, hi = max(0.0, math.floor(corner(fast))), min(head_dim - 1.0, math.ceil(corner(slow)))
        i = torch.arange(head_dim // 2, dtype=torch.float64)
        ramp = 1 - ((i - lo) / max(0.001, hi - lo)).clamp(0, 1)  # 1: unscaled, 0: scaled
        scaled = scaled * (1 - ramp) + inv * ramp
        mscale = 1 + 0.1 * math.log(1 / freq_scale)
    ang = positions.to(torch.float64)[:, None] * scaled[None, :]
    return (mscale * torch.cos(ang)).float(), (mscale * torch.sin(ang)).float()


def apply_rope(x, cos, sin, neox=False):
    """x: [B, H, T, hd]; adjacent-pair rotation (llama.cpp NORM layout), or with neox the
    pairs (i, i + hd/2) (llama.cpp NEOX layout: qwen2, qwen3, phi3)."""
    B, H, T, D = x.shape
    if neox:
        x0, x1 = x[..., : D // 2], x[..., D // 2:]
        return torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)
    xr = x.reshape(B, H, T, D // 2, 2)
    x0, x1 = xr[..., 0], xr[..., 1]
    o0 = x0 * cos - x1 * sin
    o1 = x0 * sin + x1 * cos
    return torch.stack((o0, o1), dim=-1).reshape(B, H, T, D)


class Attention(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.c = c
        hd = c.head_dim
        self.wq = nn.Linear(c.dim, c.n_heads * hd, bias=c.qkv_bias)
        self.wk = nn.Linear(c.dim, c.n_kv_heads * hd, bias=c.qkv_bias)
        self.wv = nn.Linear(c.dim, c.n_kv_heads * hd, bias=c.qkv_bias)
        self.wo = nn.Linear(c.n_heads * hd, c.dim, bias=c.out_bias)
        if c.attn_sinks:  # gpt-oss: one more softmax term exp(sink) per head, a zero value
            self.sinks = nn.Parameter(torch.zeros(c.n_heads))
        if c.qk_norm:
            self.q_norm = RMSNorm(hd, c.norm_eps)
            self.k_norm = RMSNorm(hd, c.norm_eps)

    def forward(self, x, cos, sin, mask):
        c = self.c
        B, T, _ = x.shape
        hd = c.head_dim
        q = self.wq(x).view(B, T, c.n_heads, hd).transpose(1, 2)
        k = self.wk(x).view(B, T, c.n_kv_heads, hd).transpose(1, 2)
        v = self.wv(x).view(B, T, c.n_kv_heads, hd).transpose(1, 2)
        if c.qk_norm:  # per head, over hd
            q = self.q_norm(q)
            k = self.k_norm(k)
        q = apply_rope(q, cos, sin, c.rope_neox)
        k = apply_rope(k, cos, sin, c.rope_neox)
        rep = c.n_heads // c.n_kv_heads
        if rep > 1:  # GQA: query head h uses kv head h // rep
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        H = c.n_heads
        # scores = q k^T / sqrt(hd) + causal mask (fused)
        att = torch.baddbmm(mask, q.reshape(B * H, T, hd), k.reshape(B * H, T, hd).transpose(1, 2),
                            alpha=1.0 / math.sqrt(hd))
        if c.attn_sinks:  # softmax over [scores..., sink], then the sink's column dropped
            sink = self.sinks.view(1, H, 1, 1).expand(B, H, T, 1).reshape(B * H, T, 1)
            att = F.softmax(torch.cat((att, sink), dim=-1), dim=-1)[..., :-1]
        else:
            att = F.softmax(att, dim=-1)
        y = torch.bmm(att, v.reshape(B * H, T, hd)).view(B, H, T, hd).transpose(1, 2)
        y = y.reshape(B, T, H * hd)
        return self.wo(y)


class FeedForward(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.w_gate = nn.Linear(c.dim, c.ffn_dim, bias=False)
        self.w_up = nn.Linear(c.dim, c.ffn_dim, bias=False)
        self.w_down = nn.Linear(c.ffn_dim, c.dim, bias=False)

    def forward(self, x):
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class MoeFeedForward(nn.Module):
    """qwen3moe's FFN: softmax over the router's logits, the n_experts_used most probable
    experts (SwiGLU FFNs of expert_ffn_dim) weighted by their probabilities divided by their sum
    (the same as a softmax over the chosen logits alone, gpt-oss's weights). gpt-oss adds
    biases to the router and to each expert's gate, up and down, and clamps its SwiGLU:
    g = min(g, limit), u = clamp(u, -limit, limit), act = g * sigmoid(1.702 g) * (u + 1)."""

    def __init__(self, c: LlamaConfig):
        super().__init__()
        E, f = c.n_experts, c.expert_ffn_dim
        self.k = c.n_experts_used
        self.limit = c.swiglu_limit
        self.router = nn.Linear(c.dim, E, bias=c.expert_biases)
        self.gate = nn.Parameter(torch.zeros(E, f, c.dim))
        self.up = nn.Parameter(torch.zeros(E, f, c.dim))
        self.down = nn.Parameter(torch.zeros(E, c.dim, f))
        if c.expert_biases:  # row e: expert e's
            self.gate_bias = nn.Parameter(torch.zeros(E, f))
            self.up_bias = nn.Parameter(torch.zeros(E, f))
            self.down_bias = nn.Parameter(torch.zeros(E, c.dim))

    def expert(self, x, e):
        """x [..., d] through the experts e [...] (one per row)."""
        g = torch.einsum("...d,...fd->...f", x, self.gate[e])
        u = torch.einsum("...d,...fd->...f", x, self.up[e])
        if hasattr(self, "gate_bias"):
            g, u = g + self.gate_bias[e], u + self.up_bias[e]
        if self.limit:
            g, u = g.clamp(max=self.limit), u.clamp(-self.limit, self.limit)
            act = g * torch.sigmoid(1.702 * g) * (u + 1)
        else:
            act = F.silu(g) * u
        y = torch.einsum("...f,...df->...d", act, self.down[e])
        return y + self.down_bias[e] if hasattr(self, "down_bias") else y

    def forward(self, x):
        probs = torch.softmax(self.router(x), dim=-1)
        weights, chosen = torch.topk(probs, self.k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for slot in range(self.k):
            out = out + weights[..., slot:slot + 1] * self.expert(x, chosen[..., slot])
        return out


class Block(nn.Module):
    def __init__(self, c: LlamaConfig, sliding=False):
        super().__init__()
        self.sliding = sliding  # attends a sliding window (the caller's window mask)
        self.attn_norm = RMSNorm(c.dim, c.norm_eps)
        self.attn = Attention(c)
        self.ffn_norm = RMSNorm(c.dim, c.norm_eps)
        self.ffn = MoeFeedForward(c) if c.n_experts else FeedForward(c)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        return x + self.ffn(self.ffn_norm(x))


def causal_mask(T, device=None, window=0):
    """[T, T] additive mask: query i attends keys 0..i, or with a window keys i-window+1..i."""
    m = torch.full((T, T), float("-inf"), device=device)
    return m.triu(1) + m.tril(-window) if window else m.triu(1)


class Llama(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.c = c
        self.tok_embd = nn.Embedding(c.vocab_size, c.dim)
        self.blocks = nn.ModuleList([Block(c, sliding=c.sliding_window > 0 and i % 2 == 0)
                                     for i in range(c.n_layers)])
        self.norm = RMSNorm(c.dim, c.norm_eps)
        self.output = None if c.tie_embeddings else nn.Linear(c.dim, c.vocab_size, bias=False)
        self.rope_factors = None  # llama 3.1's rope_freqs.weight, [head_dim / 2], when loaded
        self.apply(self._init)
        for n, p in self.named_parameters():
            if n.endswith("wo.weight") or n.endswith("w_down.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * c.n_layers))

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)

    def head(self, h_normed):
        if self.output is None:
            return h_normed @ self.tok_embd.weight.t()
        return self.output(h_normed)

    def forward(self, ids, return_hidden=False):
        """ids [B, T] -> logits [B, T, V]; with return_hidden also the last hidden state
        before the final norm ([B, T, d])."""
        B, T = ids.shape
        c = self.c
        cos, sin = rope_cache(c.head_dim, torch.arange(T), c.rope_base, self.rope_factors,
                              c.rope_freq_scale, c.rope_yarn_orig_ctx, c.rope_yarn_betas)
        mask, window_mask = causal_mask(T), causal_mask(T, window=c.sliding_window)
        x = self.tok_embd(ids)
        for b in self.blocks:
            x = b(x, cos, sin, window_mask if b.sliding else mask)
        logits = self.head(self.norm(x))
        return (logits, x) if return_hidden else logits


def llama_macs_per_token(c: LlamaConfig, ctx):
    """Multiply-accumulates per token: all matmuls incl. output head, plus attention
    scores/values at an average attended length of ctx/2."""
    hd = c.head_dim
    attn_proj = c.dim * (c.n_heads * hd) * 2 + c.dim * (c.n_kv_heads * hd) * 2
    ffn = 3 * c.dim * c.ffn_dim
    attn_scores = 2 * c.n_heads * hd * (ctx / 2)
    return c.n_layers * (attn_proj + ffn + attn_scores) + c.dim * c.vocab_size


# ---------------------------------------------------------------- heads

class MedusaHeads(nn.Module):
    """Medusa-1: head i (0-based) maps the target's last hidden state AFTER the final norm,
    h_t, to r_i = h_t + SiLU(W_i h_t + b_i), then logits_i = target_output(r_i)
    (the target's frozen, shared LM head; no extra norm). Head i predicts token t+i+2
    ... see FORMATS.md: head i (0-based) predicts token t+1+(i+1)."""

    def __init__(self, dim, n_heads):
        super().__init__()
        self.fc = nn.ModuleList([nn.Linear(dim, dim, bias=True) for _ in range(n_heads)])
        for l in self.fc:
            nn.init.zeros_(l.weight)
            nn.init.zeros_(l.bias)

    def forward(self, h_normed):
        return [h_normed + F.silu(l(h_normed)) for l in self.fc]


class FusedBlockModel(nn.Module):
    """Shared structure of EAGLE and MTP: x = fc([norm_a(a); norm_b(b)]) then one llama
    decoder block (causal, RoPE at position t for the sequence element built from f_t/h_t)."""

    def __init__(self, c: LlamaConfig, input_norms: bool, fc_bias: bool):
        super().__init__()
        self.c = c
        self.input_norms = input_norms
        if input_norms:
            self.hnorm = RMSNorm(c.dim, c.norm_eps)
            self.enorm = RMSNorm(c.dim, c.norm_eps)
        self.fc = nn.Linear(2 * c.dim, c.dim, bias=fc_bias)
        nn.init.normal_(self.fc.weight, std=0.02)
        if fc_bias:
            nn.init.zeros_(self.fc.bias)
        self.block = Block(c)
        for n, p in self.block.named_parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, feat, emb, pos0=0):
        """feat [B,T,d] (target hidden before final norm at positions pos0..), emb [B,T,d]
        (embedding of the NEXT token, x_{t+1}). Returns the block output [B,T,d]."""
        if self.input_norms:
            x = torch.cat([self.hnorm(feat), self.enorm(emb)], dim=-1)
        else:
            x = torch.cat([feat, emb], dim=-1)
        x = self.fc(x)
        T = x.shape[1]
        cos, sin = rope_cache(self.c.head_dim, torch.arange(pos0, pos0 + T), self.c.rope_base)
        return self.block(x, cos, sin, causal_mask(T))
