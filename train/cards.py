"""Write models/<name>.md model cards and models/README.md from the measured metrics
(train/work/metrics/*.json written by train_lm.py / train_heads.py)."""
import argparse
import hashlib
import json
import os

ORDER = ["target", "draft", "draft-gt", "medusa", "eagle", "mtp"]
DESC = {
    "target": "Target model (llama architecture) trained from scratch with next-token cross-entropy.",
    "draft": "Draft model distilled from the target with forward KL(p_target || q_draft) on the "
             "target's full next-token distributions, computed on the fly with the frozen target.",
    "draft-gt": "Same architecture as draft.gguf, trained on ground-truth next tokens (cross-entropy) "
                "for the same number of steps; a baseline for the distilled draft.",
    "medusa": "Medusa-1 heads for target.gguf (residual SiLU block per head on the target's last hidden "
              "state after output_norm; logits through the target's own output head).",
    "eagle": "EAGLE-1 head for target.gguf (feature-level autoregression on the target's last-layer "
             "hidden state before output_norm; logits through the target's output_norm and output head).",
    "mtp": "DeepSeek-V3-style multi-token-prediction module for target.gguf (predicts token t+2 from "
           "the target's hidden state h_t and token t+1).",
}


ROLE = {"target": "target (llama, from scratch)", "draft": "draft, distilled (KL) from the target",
        "draft-gt": "draft, ground-truth CE baseline", "medusa": "Medusa-1 heads",
        "eagle": "EAGLE-1 head", "mtp": "MTP module (t+2)"}


def fmt_time(s):
    return f"{s/60:.1f} min ({s:.0f} s)"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def acc_table(acc, label):
    lines = [f"| {label} | domain | greedy top-1 agreement | expected acceptance at T=1 | positions |",
             "|---|---|---|---|---|"]
    for d in ("code", "prose"):
        if d not in acc:
            continue
        per = acc[d].get("per_step", [acc[d]])
        for i, r in enumerate(per, start=1):
            lines.append(f"| {i} | {d} | {r['greedy_agreement']:.4f} | {r['expected_acceptance_T1']:.4f} | "
                         f"{r['positions']} |")
    return "\n".join(lines)


def card(key, m, out_dir, all_m):
    path = os.path.join(out_dir, f"{key}.gguf")
    size = os.path.getsize(path) if os.path.exists(path) else 0
    L = []
    L.append(f"# {key}.gguf — `{m['name']}`\n")
    L.append(DESC[key] + "\n")
    L.append("## Summary\n")
    L.append(f"- File: `models/{key}.gguf`, {size/1e6:.2f} MB, 2-D weights F16, norms/biases F32 "
             f"(sha256 `{sha256(path) if size else 'n/a'}`)")
    L.append(f"- Parameters: {m['params']:,}")
    if "model" in m:
        c = m["model"]
        L.append(f"- Shape: llama, dim {c['dim']}, {c['n_layers']} layers, {c['n_heads']} heads "
                 f"(head_dim {c['dim']//c['n_heads']}), {c['n_kv_heads']} KV heads, SwiGLU FFN {c['ffn_dim']}, "
                 f"vocab {c['vocab_size']}, context {c['context_length']}, RoPE base {c['rope_base']:g} "
                 f"(llama.cpp `llama`/NORM layout: adjacent pairs), RMSNorm eps {c['norm_eps']:g}, "
                 f"output head {'tied to token_embd' if c['tie_embeddings'] else 'untied'}")
        L.append(f"- MACs per token (all matmuls incl. output head, attention at the mean "
                 f"context of {m['config']['train']['seq_len']//2}): {m['macs_per_token']:,.0f}")
        if key == "target":
            for dk in ("draft", "draft-gt"):
                if dk in all_m:
                    L.append(f"- Target/draft MAC ratio: {m['macs_per_token']/all_m[dk]['macs_per_token']:.1f}x "
                             f"(vs {dk}.gguf)")
                    break
        elif "target_over_draft_macs" in m:
            L.append(f"- Target/draft MAC ratio: {m['target_over_draft_macs']:.1f}x")
    else:
        hc = {k2: (round(v, 8) if isinstance(v, float) else v) for k2, v in m["head_config"].items()}
        L.append(f"- Head hyperparameters: {json.dumps(hc)}")
        L.append(f"- Target: `{m['target']}` (models/target.gguf; digest in the file's `specd.target.digest`)")
    L.append(f"- Training: {m['steps']} steps, {m['tokens_seen']:,} tokens seen, "
             f"{fmt_time(m['train_seconds'])} wall time on 2 shared CPU cores (PyTorch, float32)")
    tc = m["config"]["train"]
    L.append(f"- Optimizer: AdamW (0.9, 0.95), peak LR {tc['lr']}, warmup {tc['warmup']} steps, cosine to 10% "
             f"keyed to the time budget ({tc['minutes']} min) or step budget, batch {tc['batch_size']} x "
             f"{tc['seq_len']} tokens, grad clip {tc['grad_clip']}, weight decay {tc['weight_decay']}")
    L.append("- Compute note: the 2 CPU cores were shared with concurrent C++ builds (this job ran at "
             "nice 19), so throughput was far below an idle machine and the model is undertrained for "
             "its size; the numbers below are what the shipped file achieves.")
    L.append(f"- Final training loss (mean of last 20 steps): {m['final_train_loss']:.4f}")
    L.append(f"- Export check: logits of the re-read GGUF vs the in-memory model, max |diff| = "
             f"{m['export_max_logit_diff']:.1e}")
    L.append("\nExact command (run by `make -f Makefile.models models` via train/pipeline.sh):\n")
    L.append(f"```\n{m['command']}\n```\n")
    if "val_loss" in m:
        L.append("## Validation loss (next-token cross-entropy, nats/token, validation split)\n")
        L.append("| domain | loss | perplexity |\n|---|---|---|")
        import math
        for d in ("code", "prose"):
            L.append(f"| {d} | {m['val_loss'][d]:.4f} | {math.exp(m['val_loss'][d]):.1f} |")
        L.append("")
    if "acceptance" in m:
        L.append("## Acceptance against the target (held-out split, teacher-forced on the text)\n")
        if key in ("draft", "draft-gt"):
            L.append("At every position of the held-out windows: greedy agreement = "
                     "argmax draft == argmax target; expected acceptance at T=1 = "
                     "sum_x min(p_target(x), q_draft(x)).\n")
            L.append(acc_table(m["acceptance"], "-"))
        elif key == "medusa":
            L.append("Row k = head k (stored as `medusa.{k-1}`), which predicts token t+k+1 from the target's "
                     "hidden state at t; compared with the target's own next-token distribution at position "
                     "t+k (given the true text up to t+k).\n")
            L.append(acc_table(m["acceptance"], "head"))
        elif key == "eagle":
            L.append("Row s = draft step s: the head predicts token t+s+1 from true target features up to t "
                     "and its own predicted features for steps < s (tokens from the text); compared with the "
                     "target's distribution at position t+s.\n")
            L.append(acc_table(m["acceptance"], "step"))
        elif key == "mtp":
            L.append("The module predicts token t+2 from h_t and token t+1; compared with the target's "
                     "distribution at position t+1.\n")
            L.append(acc_table(m["acceptance"], "step"))
        if "loss" in next(iter(m["acceptance"].values())):
            L.append("\nHeld-out training objective: " + ", ".join(
                f"{d} {m['acceptance'][d]['loss']:.4f}" for d in ("code", "prose")))
        L.append("")
    L.append("## Data and tokenizer\n")
    L.append("Python 3.11 standard library source (code) and the Python 3.11 documentation reST sources "
             "(prose) from Debian packages, split by file (train/README.md, train/corpus/split.json). "
             "Byte-level BPE, 4096 tokens, `<s>` = 0 (BOS), `</s>` = 1 (EOS), llama.cpp `gpt2` vocab "
             "with the `gpt-2` pre-tokenizer; stored in the GGUF metadata of target and drafts. "
             "Formats: train/FORMATS.md.\n")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--metrics", default="train/work/metrics")
    ap.add_argument("--out", default="models")
    ap.add_argument("--total-seconds", type=float, default=None)
    a = ap.parse_args()
    all_m = {}
    for k in ORDER:
        p = os.path.join(a.metrics, f"{k}.json")
        if os.path.exists(p):
            with open(p) as f:
                all_m[k] = json.load(f)
    for k, m in all_m.items():
        with open(os.path.join(a.out, f"{k}.md"), "w") as f:
            f.write(card(k, m, a.out, all_m))
    idx = ["# Models\n",
           "Small models trained by `train/` (see train/README.md; formats in train/FORMATS.md). "
           "All files are GGUF v3, F16 weights. Regenerate with `make -f Makefile.models models`.\n",
           "| file | role | params | tokens seen | train time | key result |", "|---|---|---|---|---|---|"]
    total = 0.0
    for k, m in all_m.items():
        total += m["train_seconds"]
        if "val_loss" in m and "acceptance" not in m:
            res = f"val loss code {m['val_loss']['code']:.3f} / prose {m['val_loss']['prose']:.3f}"
        else:
            acc = m["acceptance"]
            r = {d: (acc[d].get("per_step", [acc[d]])[0]) for d in ("code", "prose")}
            res = "step/head 1 acceptance T=1: " + " / ".join(
                f"{d} {r[d]['expected_acceptance_T1']:.3f} (greedy {r[d]['greedy_agreement']:.3f})" for d in r)
        idx.append(f"| [{k}.gguf]({k}.md) | {ROLE[k]} | {m['params']:,} | "
                   f"{m['tokens_seen']:,} | {m['train_seconds']/60:.1f} min | {res} |")
    idx.append(f"\nSum of the per-stage training times: {total/60:.1f} min (draft, Medusa, EAGLE and MTP trained in parallel, one thread each, after the target)"
               + (f"; whole pipeline wall time incl. data preparation and evaluation: "
                  f"{a.total_seconds/60:.1f} min." if a.total_seconds else "."))
    idx.append("\nHeads carry `specd.target.name` and `specd.target.digest` and must only be used with "
               "models/target.gguf.\n")
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("\n".join(idx) + "\n")
    print(f"wrote {len(all_m)} cards and README.md to {a.out}")


if __name__ == "__main__":
    main()
