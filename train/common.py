"""Shared training utilities: configs, data windows, LR schedule, evaluation, logging."""
import json
import math
import os
import sys
import time
import tomllib

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from train.model import LlamaConfig, Llama  # noqa: E402
from train.tokenizer import BOS_ID  # noqa: E402


def load_config(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def add_run_args(ap):
    """The options every training script takes: data, outputs, and how long to train."""
    ap.add_argument("--data", default="train/work/data")
    ap.add_argument("--out", required=True)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--minutes", type=float, default=None)
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--eval-windows", type=int, default=None)
    ap.add_argument("--batch-size", type=int, default=None, help="override (smoke tests)")
    ap.add_argument("--seq-len", type=int, default=None, help="override (smoke tests)")


def setup_threads(n=None):
    n = n or int(os.environ.get("SPECD_TRAIN_THREADS", "2"))
    torch.set_num_threads(n)
    torch.manual_seed(1234)
    np.random.seed(1234)


class Data:
    def __init__(self, data_dir):
        self.dir = data_dir
        self.arr = {}
        for split in ("train", "validation", "heldout"):
            for d in ("code", "prose"):
                p = os.path.join(data_dir, f"{split}_{d}.npy")
                if os.path.exists(p):
                    self.arr[(split, d)] = np.load(p).astype(np.int64)
        self.train = np.concatenate([self.arr[("train", "code")], self.arr[("train", "prose")]])

    def batch(self, rng, B, L):
        """Random windows from the train stream: x = [<s>] + s[i:i+L-1], y = s[i:i+L]."""
        n = len(self.train)
        idx = rng.integers(0, n - L - 1, size=B)
        y = np.stack([self.train[i:i + L] for i in idx])
        x = np.concatenate([np.full((B, 1), BOS_ID), y[:, :-1]], axis=1)
        return torch.from_numpy(x), torch.from_numpy(y)

    def windows(self, split, domain, L, max_windows=None):
        """Fixed, non-overlapping windows (same construction as batch())."""
        s = self.arr[(split, domain)]
        n = (len(s)) // L
        if max_windows:
            n = min(n, max_windows)
        y = np.stack([s[i * L:(i + 1) * L] for i in range(n)])
        x = np.concatenate([np.full((n, 1), BOS_ID), y[:, :-1]], axis=1)
        return torch.from_numpy(x), torch.from_numpy(y)


class Budget:
    """Train for `minutes` or `max_steps`, whichever first. progress() in [0, 1]."""

    def __init__(self, minutes, max_steps):
        self.t0 = time.time()
        self.sec = minutes * 60.0
        self.max_steps = max_steps

    def progress(self, step):
        return min(1.0, max((time.time() - self.t0) / self.sec, step / self.max_steps))

    def done(self, step):
        return self.progress(step) >= 1.0

    def elapsed(self):
        return time.time() - self.t0


def lr_at(step, progress, peak, warmup, min_ratio=0.1):
    w = min(1.0, (step + 1) / max(1, warmup))
    cos = min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    return peak * w * cos


def make_optimizer(params, lr, wd):
    decay = [p for p in params if p.dim() >= 2]
    nodecay = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": wd},
                              {"params": nodecay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), eps=1e-8)


class TrainResult:
    def __init__(self, steps, tokens, seconds, losses):
        self.steps, self.tokens, self.seconds = steps, tokens, seconds
        self.final_loss = float(np.mean(losses[-20:])) if losses else None


def train_loop(params, tc, minutes, max_steps, step_loss, log):
    """The loop every trainer shares: AdamW with warmup and cosine decay over the budget
    (`minutes` or `max_steps`, whichever ends first), gradient clipping, logging every
    `log_every` steps. `step_loss(rng)` returns (loss, tokens in the batch) for one batch
    drawn with `rng` (seeded from tc["seed"]). The parameters end rounded to f16, as they
    will be exported."""
    params = list(params)
    opt = make_optimizer(params, tc["lr"], tc["weight_decay"])
    budget = Budget(minutes, max_steps)
    rng = np.random.default_rng(tc.get("seed", 0))
    step, tokens, losses = 0, 0, []
    while not budget.done(step):
        lr = lr_at(step, budget.progress(step), tc["lr"], tc["warmup"])
        for g in opt.param_groups:
            g["lr"] = lr
        loss, n = step_loss(rng)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, tc["grad_clip"])
        opt.step()
        step += 1
        tokens += n
        losses.append(loss.item())
        if step % tc.get("log_every", 20) == 0:
            log(f"step {step} tok {tokens} loss {np.mean(losses[-20:]):.4f} lr {lr:.2e} "
                f"progress {budget.progress(step):.3f} tok/s {tokens/budget.elapsed():.0f}")
    seconds = budget.elapsed()
    log(f"training done: {step} steps, {tokens} tokens, {seconds:.0f}s")
    with torch.no_grad():
        for p in params:
            p.copy_(p.half().float())
    return TrainResult(step, tokens, seconds, losses)


def llama_from_cfg(mcfg, vocab_size):
    c = LlamaConfig(vocab_size=vocab_size, **mcfg)
    return Llama(c)


@torch.no_grad()
def eval_lm(model, data, L, split="validation", max_windows=None, bs=8):
    """Mean next-token cross-entropy (nats) per domain."""
    model.eval()
    out = {}
    for d in ("code", "prose"):
        x, y = data.windows(split, d, L, max_windows)
        tot, n = 0.0, 0
        for i in range(0, len(x), bs):
            lg = model(x[i:i + bs])
            tot += F.cross_entropy(lg.reshape(-1, lg.shape[-1]), y[i:i + bs].reshape(-1),
                                   reduction="sum").item()
            n += y[i:i + bs].numel()
        out[d] = tot / max(1, n)
    model.train()
    return out


def acceptance_stats(p_logits, q_logits):
    """p = target, q = draft; logits [..., V] aligned to the same predicted token.
    Returns (sum of greedy agreements, sum over positions of sum_x min(p,q), count)."""
    p = F.softmax(p_logits.float(), -1)
    q = F.softmax(q_logits.float(), -1)
    agree = (p_logits.argmax(-1) == q_logits.argmax(-1)).float().sum().item()
    acc = torch.minimum(p, q).sum(-1).sum().item()
    return agree, acc, p_logits.shape[:-1].numel()


def write_json(path, obj):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


class Log:
    def __init__(self, name):
        self.name = name
        self.t0 = time.time()

    def __call__(self, *a):
        print(f"[{self.name} {time.time()-self.t0:7.1f}s]", *a, flush=True)
