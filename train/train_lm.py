"""Train a llama-architecture LM (target or draft) and export it to GGUF.

objective = "ce": next-token cross-entropy on the corpus (target, draft-gt)
objective = "kd": forward KL(p_target || q_draft) against a frozen target GGUF whose
                  next-token distributions are computed on the fly (no_grad).

Usage: /usr/bin/python3 train/train_lm.py --config train/configs/target.toml
       [--data train/work/data] [--out models/target.gguf] [--metrics train/work/metrics/target.json]
       [--minutes M] [--max-steps N] [--teacher models/target.gguf]
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from train import common  # noqa: E402
from train.export import export_llama, load_llama  # noqa: E402
from train.model import llama_macs_per_token  # noqa: E402
from train.tokenizer import Tokenizer  # noqa: E402


@torch.no_grad()
def heldout_acceptance(target, draft, data, L, max_windows, bs=8):
    target.eval()
    draft.eval()
    res = {}
    for d in ("code", "prose"):
        x, _ = data.windows("heldout", d, L, max_windows)
        ag = ac = n = 0.0
        for i in range(0, len(x), bs):
            a, b, c = common.acceptance_stats(target(x[i:i + bs]), draft(x[i:i + bs]))
            ag += a
            ac += b
            n += c
        res[d] = {"greedy_agreement": ag / n, "expected_acceptance_T1": ac / n, "positions": int(n)}
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--teacher", default=None)
    common.add_run_args(ap)
    a = ap.parse_args()
    cfg = common.load_config(a.config)
    common.setup_threads()
    tc = cfg["train"]
    name = cfg["name"]
    log = common.Log(name)
    tok = Tokenizer.load(os.path.join(a.data, "tokenizer.json"))
    data = common.Data(a.data)
    model = common.llama_from_cfg(cfg["model"], tok.vocab_size)
    c = model.c
    n_params = sum(p.numel() for p in model.parameters())
    if a.seq_len:
        tc["seq_len"] = a.seq_len
    if a.batch_size:
        tc["batch_size"] = a.batch_size
    L, B = tc["seq_len"], tc["batch_size"]
    assert L <= c.context_length
    objective = tc.get("objective", "ce")
    teacher = None
    if objective == "kd":
        tpath = a.teacher or tc["teacher"]
        teacher, _ = load_llama(tpath)
        for p in teacher.parameters():
            p.requires_grad_(False)
    minutes = a.minutes if a.minutes is not None else tc["minutes"]
    max_steps = a.max_steps if a.max_steps is not None else tc["max_steps"]
    ms = tc.get("match_steps_metrics")
    if ms and a.max_steps is None:
        mp = os.path.join(os.path.dirname(a.metrics), ms)
        if os.path.exists(mp):
            import json
            with open(mp) as f:
                ref = json.load(f)
            max_steps = ref["steps"]
            minutes = max(minutes, 1.5 * ref["train_seconds"] / 60)
            log(f"matching {ms}: max_steps {max_steps}")
    eval_windows = a.eval_windows if a.eval_windows is not None else tc.get("eval_windows", 0) or None
    log(f"params {n_params}, macs/token {llama_macs_per_token(c, L):.0f}, objective {objective}, "
        f"budget {minutes} min / {max_steps} steps")
    model.train()

    def step_loss(rng):
        x, y = data.batch(rng, B, L)
        logits = model(x)
        if objective == "kd":
            with torch.no_grad():
                logp = F.log_softmax(teacher(x), -1)
            logq = F.log_softmax(logits, -1)
            return (logp.exp() * (logp - logq)).sum(-1).mean(), x.numel()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)), x.numel()

    run = common.train_loop(model.parameters(), tc, minutes, max_steps, step_loss, log)
    model.eval()
    export_llama(model, tok, name, a.out)
    # validate the export: read back, compare logits with the in-memory (f16-rounded) model
    back, _ = load_llama(a.out)
    xv, _ = data.windows("validation", "prose", min(L, 64), 2)
    with torch.no_grad():
        diff = (back(xv) - model(xv)).abs().max().item()
    log(f"export check: max |logit diff| = {diff:.2e}")
    assert diff < 1e-3, diff
    val = common.eval_lm(model, data, L, "validation", eval_windows)
    log(f"validation loss: {val}")
    metrics = {
        "name": name, "file": a.out, "config": cfg, "model": c.to_dict(), "params": n_params,
        "macs_per_token": llama_macs_per_token(c, L), "objective": objective,
        "steps": run.steps, "tokens_seen": run.tokens, "train_seconds": run.seconds,
        "final_train_loss": run.final_loss,
        "val_loss": val, "export_max_logit_diff": diff,
        "command": "/usr/bin/python3 " + " ".join(sys.argv),
    }
    if teacher is None and tc.get("teacher_for_eval"):
        tpath = a.teacher or tc["teacher_for_eval"]
        if os.path.exists(tpath):
            teacher, _ = load_llama(tpath)
    if teacher is not None:
        metrics["target_macs_per_token"] = llama_macs_per_token(teacher.c, L)
        metrics["target_over_draft_macs"] = metrics["target_macs_per_token"] / metrics["macs_per_token"]
        metrics["acceptance"] = heldout_acceptance(teacher, model, data, L, eval_windows)
        log(f"acceptance vs target: {metrics['acceptance']}")
    common.write_json(a.metrics, metrics)


if __name__ == "__main__":
    main()
