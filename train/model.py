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
    # Architecture variants (llama.cpp's qwen2, qwen3, phi3 and llama 3.1 layouts); the
    # defaults are the plain llama block that the shipped models use.
    key_length: int = 0           # head dim when not dim // n_heads (qwen3)
    rope_neox: bool = False       # rotate pairs (i, i + hd/2) instead of (2i, 2i+1)
    qkv_bias: bool = False        # biases on the q, k, v projections (qwen2)
    qk_norm: bool = False         # RMSNorm over each head of q and k before RoPE (qwen3)
    rope_freq_scale: float = 1.0  # linear rope scaling: every angle times this
    # A mixture of experts (qwen3moe) in place of the FFN: experts, experts per token, their size.
    n_experts: int = 0
    n_experts_used: int = 0
    expert_ffn_dim: int = 0

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


def rope_cache(head_dim, positions, base, factors=None, freq_scale=1.0):
    """positions: LongTensor [T] -> cos, sin of shape [T, head_dim/2]. Pair i turns by
    pos * freq_scale * base^(-2i/head_dim) / factors[i] (factors: llama 3.1's rope_freqs)."""
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    if factors is not None:
        inv = inv / factors.to(torch.float64)
    ang = positions.to(torch.float64)[:, None] * inv[None, :] * freq_scale
    return torch.cos(ang).float(), torch.sin(ang).float()


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
        self.wo = nn.Linear(c.n_heads * hd, c.dim, bias=False)
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
    experts (SwiGLU FFNs of expert_ffn_dim) weighted by their probabilities divided by their sum."""

    def __init__(self, c: LlamaConfig):
        super().__init__()
        E, f = c.n_experts, c.expert_ffn_dim
        self.k = c.n_experts_used
        self.router = nn.Linear(c.dim, E, bias=False)
        self.gate = nn.Parameter(torch.zeros(E, f, c.dim))
        self.up = nn.Parameter(torch.zeros(E, f, c.dim))
        self.down = nn.Parameter(torch.zeros(E, c.dim, f))

    def forward(self, x):
        probs = torch.softmax(self.router(x), dim=-1)
        weights, chosen = torch.topk(probs, self.k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for slot in range(self.k):
            e = chosen[..., slot]
            g = torch.einsum("...d,...fd->...f", x, self.gate[e])
            u = torch.einsum("...d,...fd->...f", x, self.up[e])
            y = torch.einsum("...f,...df->...d", F.silu(g) * u, self.down[e])
            out = out + weights[..., slot:slot + 1] * y
        return out


class Block(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.attn_norm = RMSNorm(c.dim, c.norm_eps)
        self.attn = Attention(c)
        self.ffn_norm = RMSNorm(c.dim, c.norm_eps)
        self.ffn = MoeFeedForward(c) if c.n_experts else FeedForward(c)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        return x + self.ffn(self.ffn_norm(x))


def causal_mask(T, device=None):
    return torch.full((T, T), float("-inf"), device=device).triu(1)


class Llama(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.c = c
        self.tok_embd = nn.Embedding(c.vocab_size, c.dim)
        self.blocks = nn.ModuleList([Block(c) for _ in range(c.n_layers)])
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
        cos, sin = rope_cache(self.c.head_dim, torch.arange(T), self.c.rope_base,
                              self.rope_factors, self.c.rope_freq_scale)
        mask = causal_mask(T)
        x = self.tok_embd(ids)
        for b in self.blocks:
            x = b(x, cos, sin, mask)
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
