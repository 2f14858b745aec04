"""Train speculative-decoding heads on a frozen target GGUF and export them to GGUF.

--kind medusa : Medusa-1 heads on the target's last hidden state after the final norm;
                head k (k = 1..K, stored as medusa.{k-1}) predicts token t+k+1; logits through
                the target's frozen, shared output head. Loss: sum_k 0.8^(k-1) *
                KL(p_target(. | x_<=t+k) || q_k(. | x_<=t)), i.e. soft targets are the target's
                own next-token distributions on the training text.
--kind eagle  : EAGLE-1 head. Element t = fc([f_t ; E(x_{t+1})]) -> one llama decoder block
                (causal, RoPE position t) -> predicted feature f^_{t+1}; logits via the target's
                frozen output_norm + output head. f = target last-layer hidden state BEFORE the
                final norm, E = the target's frozen token embedding. Loss: SmoothL1(f^_{t+1},
                f_{t+1}) + w_kl * KL(p_target(. | x_<=t+1) || softmax(head(norm(f^_{t+1})))).
--kind mtp    : DeepSeek-V3-style MTP module. Element t = eh_proj([hnorm(h_t) ; enorm(E(x_{t+1}))])
                -> one llama decoder block (RoPE position t) -> o_t; logits via the target's
                frozen output_norm + output head predict token t+2. h = target last-layer hidden
                state before the final norm. Loss: KL(p_target(. | x_<=t+1) || q(. | o_t)).
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from train import common  # noqa: E402
from train.export import load_llama, export_medusa, export_eagle, export_mtp, load_head  # noqa: E402
from train.model import MedusaHeads, FusedBlockModel, LlamaConfig  # noqa: E402


def kl(p_logits, q_logits):
    """mean over positions of KL(softmax(p) || softmax(q))."""
    logp = F.log_softmax(p_logits, -1)
    logq = F.log_softmax(q_logits, -1)
    return (logp.exp() * (logp - logq)).sum(-1).mean()


class Runner:
    def __init__(self, kind, target, head, cfg):
        self.kind, self.t, self.h, self.cfg = kind, target, head, cfg

    def target_pass(self, x):
        with torch.no_grad():
            logits, hid = self.t(x, return_hidden=True)
        return logits, hid

    def losses(self, x, tlogits, hid):
        """Returns (loss, list of (pred_logits, target_logits) per step/head) for x [B,T]."""
        t, tc = self.t, self.cfg["train"]
        if self.kind == "medusa":
            normed = t.norm(hid)
            outs = self.h(normed)
            loss, pairs = 0.0, []
            for k, r in enumerate(outs, start=1):
                q = t.head(r[:, :-k])
                p = tlogits[:, k:]
                loss = loss + (tc.get("decay", 0.8) ** (k - 1)) * kl(p, q)
                pairs.append((q, p))
            return loss, pairs
        emb = t.tok_embd(x[:, 1:])
        feat = hid[:, :-1]
        o = self.h(feat, emb)
        q = t.head(t.norm(o))
        p = tlogits[:, 1:]
        if self.kind == "eagle":
            reg = F.smooth_l1_loss(o, hid[:, 1:])
            loss = tc.get("w_reg", 1.0) * reg + tc.get("w_kl", 0.1) * kl(p, q)
        else:
            loss = kl(p, q)
        return loss, [(q, p)]


@torch.no_grad()
def eagle_multistep(target, head, x, hid, tlogits, steps):
    """Teacher-forced multi-step acceptance for EAGLE: step s (1-based) predicts token t+s+1
    from true features f_0..f_t, tokens up to x_{t+s}, and the head's own predicted features
    f^_{t+1}..f^_{t+s-1}. Done for all t in parallel with an explicit attention mask over
    [true elements ; step-1 elements ; ... ]. Returns list of (q_logits, p_logits) per step."""
    import math
    from train.model import rope_cache, apply_rope
    c = head.c
    B, T = x.shape
    n = T - 1  # number of elements per chain
    blk = head.block
    # element (j, s): feature input is f_j (s=0 true) or f^ from step s-1, token input x_{j+1}
    emb = target.tok_embd(x[:, 1:])          # [B, n, d]  token x_{j+1} at element j
    feats = [hid[:, :-1]]                     # true features f_j at element j
    keys, vals = [], []
    res = []
    pos = torch.arange(n)
    cos, sin = rope_cache(c.head_dim, pos, c.rope_base)
    H, KV, hd = c.n_heads, c.n_kv_heads, c.head_dim
    for s in range(steps + 1):
        # level s elements: index j holds the element at sequence position j whose feature is
        # f_j (s=0) or f^_j predicted at draft step s (from level s-1 element j-1).
        xin = head.fc(torch.cat([feats[s], emb], -1))
        hn = blk.attn_norm(xin)
        q = blk.attn.wq(hn).view(B, n, H, hd).transpose(1, 2)
        k = blk.attn.wk(hn).view(B, n, KV, hd).transpose(1, 2)
        v = blk.attn.wv(hn).view(B, n, KV, hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = H // KV
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        keys.append(k)
        vals.append(v)
        # query at level s, index i: the chain started at t = i - s; keys allowed:
        # level 0 (true) j <= i - s, and level l (1..s) exactly index j = i - s + l.
        K = torch.cat(keys, 2)
        V = torch.cat(vals, 2)
        i = torch.arange(n)[:, None]
        j = torch.arange(n)[None, :]
        masks = [(j <= i - s)]
        for l in range(1, s + 1):
            masks.append(j == i - s + l)
        allowed = torch.cat(masks, 1)
        att = (q @ K.transpose(-1, -2)) / math.sqrt(hd)
        att = att.masked_fill(~allowed, float("-inf"))
        valid = allowed.any(1)
        att = torch.where(valid[:, None].expand_as(allowed), att, torch.zeros_like(att))
        y = (F.softmax(att, -1) @ V).transpose(1, 2).reshape(B, n, H * hd)
        xo = xin + blk.attn.wo(y)
        o = xo + blk.ffn(blk.ffn_norm(xo))     # f^_{i+1} predicted from element i at level s
        # predicted feature for position i+1 becomes the level s+1 input at index i+1
        nxt = torch.zeros_like(o)
        nxt[:, 1:] = o[:, :-1]
        feats.append(nxt)
        if s < steps:
            # element i at level s predicts token x_{i+2}; valid chains need i - s >= 0
            lo = s
            qlog = target.head(target.norm(o[:, lo:n]))
            plog = tlogits[:, lo + 1:n + 1]
            res.append((qlog, plog))
        if len(res) == steps:
            break
    return res


@torch.no_grad()
def evaluate(runner, data, L, max_windows, bs=8, eagle_steps=0):
    res = {}
    for d in ("code", "prose"):
        agg = None
        for split in ("heldout",):
            x, _ = data.windows(split, d, L, max_windows)
            for i in range(0, len(x), bs):
                xb = x[i:i + bs]
                tl, hid = runner.target_pass(xb)
                loss, pairs = runner.losses(xb, tl, hid)
                if eagle_steps > 1:
                    pairs = eagle_multistep(runner.t, runner.h, xb, hid, tl, eagle_steps)
                if agg is None:
                    agg = [[0.0, 0.0, 0] for _ in pairs] + [[0.0, 0]]
                for k, (q, p) in enumerate(pairs):
                    a, b, c = common.acceptance_stats(p, q)
                    agg[k][0] += a
                    agg[k][1] += b
                    agg[k][2] += c
                agg[-1][0] += loss.item() * len(xb)
                agg[-1][1] += len(xb)
        res[d] = {"per_step": [{"greedy_agreement": a / c, "expected_acceptance_T1": b / c,
                                "positions": c} for a, b, c in agg[:-1]],
                  "loss": agg[-1][0] / agg[-1][1]}
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", required=True, choices=["medusa", "eagle", "mtp"])
    ap.add_argument("--config", required=True)
    ap.add_argument("--target", required=True)
    common.add_run_args(ap)
    a = ap.parse_args()
    cfg = common.load_config(a.config)
    tc = cfg["train"]
    common.setup_threads()
    name = cfg["name"]
    log = common.Log(name)
    target, treader = load_llama(a.target)
    for p in target.parameters():
        p.requires_grad_(False)
    tcfg = target.c
    data = common.Data(a.data)
    if a.kind == "medusa":
        head = MedusaHeads(tcfg.dim, cfg["model"]["n_heads"])
        hc = None
    else:
        mc = dict(cfg.get("model", {}))
        hc = LlamaConfig(vocab_size=tcfg.vocab_size, dim=tcfg.dim,
                         n_layers=1, n_heads=mc.get("n_heads", tcfg.n_heads),
                         n_kv_heads=mc.get("n_kv_heads", tcfg.n_kv_heads),
                         ffn_dim=mc.get("ffn_dim", tcfg.ffn_dim), context_length=tcfg.context_length,
                         rope_base=tcfg.rope_base, norm_eps=tcfg.norm_eps)
        head = FusedBlockModel(hc, input_norms=(a.kind == "mtp"), fc_bias=(a.kind == "eagle"))
    n_params = sum(p.numel() for p in head.parameters())
    runner = Runner(a.kind, target, head, cfg)
    minutes = a.minutes if a.minutes is not None else tc["minutes"]
    max_steps = a.max_steps if a.max_steps is not None else tc["max_steps"]
    eval_windows = a.eval_windows if a.eval_windows is not None else tc.get("eval_windows", 0) or None
    if a.seq_len:
        tc["seq_len"] = a.seq_len
    if a.batch_size:
        tc["batch_size"] = a.batch_size
    L, B = tc["seq_len"], tc["batch_size"]
    log(f"{a.kind}: params {n_params}, budget {minutes} min / {max_steps} steps")
    head.train()

    def step_loss(rng):
        x, _ = data.batch(rng, B, L)
        tl, hid = runner.target_pass(x)
        loss, _ = runner.losses(x, tl, hid)
        return loss, x.numel()

    run = common.train_loop(head.parameters(), tc, minutes, max_steps, step_loss, log)
    head.eval()
    if a.kind == "medusa":
        export_medusa(head, tcfg, name, treader, a.out)
    elif a.kind == "eagle":
        export_eagle(head, name, treader, a.out)
    else:
        export_mtp(head, name, treader, a.out)
    kind2, back, _, _ = load_head(a.out)
    xb, _ = data.windows("validation", "prose", 64, 2)
    tl, hid = runner.target_pass(xb)
    _, p1 = runner.losses(xb, tl, hid)
    runner.h = back
    _, p2 = runner.losses(xb, tl, hid)
    runner.h = head
    diff = max((q1 - q2).abs().max().item() for (q1, _), (q2, _) in zip(p1, p2))
    log(f"export check: max |logit diff| = {diff:.2e}")
    assert diff < 1e-3
    steps = tc.get("eval_steps", 1) if a.kind == "eagle" else 0
    acc = evaluate(runner, data, L, eval_windows, eagle_steps=steps)
    log(f"held-out acceptance: {acc}")
    metrics = {"name": name, "kind": a.kind, "file": a.out, "config": cfg, "params": n_params,
               "head_config": hc.to_dict() if hc else {"dim": tcfg.dim, "n_heads": len(head.fc)},
               "target": treader.meta["general.name"], "steps": run.steps, "tokens_seen": run.tokens,
               "train_seconds": run.seconds, "final_train_loss": run.final_loss,
               "acceptance": acc, "export_max_logit_diff": diff,
               "command": "/usr/bin/python3 " + " ".join(sys.argv)}
    common.write_json(a.metrics, metrics)


if __name__ == "__main__":
    main()
