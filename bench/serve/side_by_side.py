"""serve_bench.py's side-by-side mode (--peer DIR): specd serve and llama.cpp's llama-server
on the same GGUF target and draft, each plain and speculative, driven by the same closed-loop
clients (python3 standard library only).

Four arms: specd plain ({"proposer": "none"}), specd speculative (the draft model, k as
given, default "auto", the exact rejection rule), llama-server plain, llama-server with the
draft (-md --spec-type draft-simple --spec-draft-n-max K). With --draft mtp both draft with
the target file's own MTP layers (specd's mtp proposer, llama-server's --spec-type draft-mtp). Both engines get the same threads,
the same KV cache type, and for each concurrency level c servers started afresh with c slots
of --context tokens each (llama-server's prompt cache and specd's prefix cache are off: the
repeats resend the same prompts). For each concurrency level every arm runs once
untimed (8 tokens), then `repeats` times with the arms in a rotating order, so a drift of
the machine favours none. Per arm and level: throughput (completion tokens / wall time, the
median over repeats, min-max), TTFT and TPOT p50, and the ratios paired by repeat against
both plain arms. Greedy (temperature 0) throughout: every text must be identical across the
four arms, request for request (a difference is reported and fails the run).
"""

import json
import os
import subprocess
import sys
import tempfile

import llama_server
import specd_server as ss

ARMS = ("specd off", "specd draft", "llama.cpp off", "llama.cpp draft")


def write_specd_config(path, target, draft, threads, slots, k, context, kv_type):
    k_text = '"auto"' if k == "auto" else str(int(k))
    kind = "mtp" if draft == "mtp" else "draft-model"
    draft = target if draft == "mtp" else draft
    with open(path, "w") as f:
        f.write(
            '[engine]\nbackend = "cpu"\nthreads = %d\nseed = 1\ncontext = %d\nkv_type = "%s"\n'
            '[target]\nmodel = "%s"\n'
            '[proposer]\nkind = "%s"\nmodel = "%s"\nk = %s\n'
            '[acceptance]\nrule = "rejection"\n'
            "[sampling]\ntemperature = 0.0\n"
            # The prefix cache off, as llama-server's prompt cache is (the repeats resend the
            # same prompts: a cache would serve them from the first run).
            "[server]\nport = 0\nmax_sequences = %d\nqueue_limit = %d\nmax_engines = 4\n"
            "prefix_cache = false\n"
            % (threads, context, kv_type, os.path.abspath(target), kind, os.path.abspath(draft),
               k_text, slots, max(slots, 16)))
    return path


def median(values):
    v = sorted(values)
    if not v:
        return None
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def start_servers(args, binary, work, slots, servers):
    """specd serve and the two llama-servers for `slots` concurrent requests (appended to
    `servers` as each starts); returns the arms: name -> (port, request fields)."""
    config = write_specd_config(os.path.join(work, "serve-%d.toml" % slots), args.target,
                                args.draft, args.threads, slots, args.k, args.context,
                                args.kv_type)
    specd = ss.Server(args.specd, config, timeout=600)
    servers.append(specd)
    plain = llama_server.LlamaServer(binary, args.target, args.threads, slots, args.context,
                                     kv_type=args.kv_type)
    servers.append(plain)
    spec = llama_server.LlamaServer(binary, args.target, args.threads, slots, args.context,
                                    kv_type=args.kv_type, draft=args.draft,
                                    draft_max=args.peer_draft_max)
    servers.append(spec)
    k = "auto" if args.k == "auto" else int(args.k)
    # llama-server keeps each slot's last prompt and reuses it: the repeats send the same
    # prompts, so that would time prefill once per cell for it only.
    return {
        "specd off": (specd.port, {"speculative": {"proposer": "none"}}),
        "specd draft": (specd.port, {"speculative": {
            "proposer": "mtp" if args.draft == "mtp" else "draft-model", "k": k,
            "rule": "rejection"}}),
        "llama.cpp off": (plain.port, {"cache_prompt": False}),
        "llama.cpp draft": (spec.port, {"cache_prompt": False}),
    }


def summarize(level, runs):
    """The report's cells of one concurrency level from every arm's runs."""
    cells = []
    for name in ARMS:
        rs = runs[name]
        tput = [r["throughput_tok_s"] or 0 for r in rs]
        cell = {"arm": name, "concurrency": level, "repeats": len(rs),
                "throughput_tok_s": median(tput), "throughput_min": min(tput),
                "throughput_max": max(tput),
                "ttft_ms_p50": median([r["ttft_ms_p50"] for r in rs
                                       if r["ttft_ms_p50"] is not None]),
                "tpot_ms_p50": median([r["tpot_ms_p50"] for r in rs
                                       if r["tpot_ms_p50"] is not None]),
                "tau": median([r["tau"] for r in rs if r["tau"] is not None]),
                "errors": [e for r in rs for e in r["errors"]],
                "runs": [{k: v for k, v in r.items() if k != "texts"} for r in rs]}
        for base in ("specd off", "llama.cpp off"):
            cell["vs " + base] = paired_ratio(rs, runs[base])
        cell["specd draft vs llama.cpp draft"] = paired_ratio(runs["specd draft"],
                                                              runs["llama.cpp draft"])
        cells.append(cell)
    return cells


def paired_ratio(runs, base_runs):
    """The median over repeats of one arm's throughput over another's in the same repeat."""
    ratios = [a["throughput_tok_s"] / b["throughput_tok_s"] for a, b in zip(runs, base_runs)
              if a["throughput_tok_s"] and b["throughput_tok_s"]]
    return round(median(ratios), 3) if ratios else None


def run(args, run_cell, load_prompts, machine):
    """The side-by-side benchmark; returns the process exit status."""
    levels = [int(x) for x in args.concurrency.split(",")]
    prompts = load_prompts(args.tasks.split(","), args.prompts)
    binary = llama_server.find_binary(args.peer)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.TemporaryDirectory()
    cells = []
    commands = []
    reference = None  # greedy: one text per prompt, whatever the arm and the level
    texts_equal = True
    for level in levels:
        # Every engine gets exactly `level` slots: llama-server with more slots than
        # requests runs slower per request, and specd is given the same.
        servers = []
        try:
            arms = start_servers(args, binary, work.name, level, servers)
            commands += [" ".join(s.command) for s in servers[1:]]
            for name in ARMS:  # untimed: every arm once at this concurrency
                port, extra = arms[name]
                run_cell(port, prompts[:level], level, extra, 8)
            runs = {name: [] for name in ARMS}
            for rep in range(args.repeats):
                for name in ARMS[rep % 4:] + ARMS[:rep % 4]:
                    port, extra = arms[name]
                    r = run_cell(port, prompts, level, extra, args.max_tokens)
                    runs[name].append(r)
                    print("c=%-3d %-16s run %d/%d %8.1f tok/s  TTFT p50 %s ms  TPOT p50 %s ms  "
                          "errors %d" % (level, name, rep + 1, args.repeats,
                                         r["throughput_tok_s"] or 0, r["ttft_ms_p50"],
                                         r["tpot_ms_p50"], len(r["errors"])), flush=True)
        finally:
            for s in reversed(servers):
                s.stop()
        for name in ARMS:
            for r in runs[name]:
                reference = reference or r["texts"]
                if r["texts"] != reference:
                    texts_equal = False
                    print("c=%d %s: texts differ from specd off's at c=%d" % (
                        level, name, levels[0]))
        cells += summarize(level, runs)
    report = {
        "command": " ".join(["python3", "bench/serve/serve_bench.py"] + sys.argv[1:]),
        "mode": "side-by-side",
        "args": {"target": args.target, "draft": args.draft, "threads": args.threads,
                 "concurrency": levels, "tasks": args.tasks.split(","), "prompts": args.prompts,
                 "max_tokens": args.max_tokens, "repeats": args.repeats, "k": args.k,
                 "peer_draft_max": args.peer_draft_max, "context": args.context,
                 "kv_type": args.kv_type},
        "llama_server_commands": commands,
        "requests_per_cell": len(prompts),
        "machine": machine(),
        "texts_identical_across_arms": texts_equal,
        "cells": cells,
    }
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=2)
    write_markdown(os.path.join(args.out, "report.md"), report)
    print("wrote %s/report.json, report.md" % args.out)
    errors = sum(len(c["errors"]) for c in cells)
    return 1 if errors or not texts_equal else 0


def write_markdown(path, report):
    a = report["args"]
    m = report["machine"]
    fmt = lambda v, f="%.1f": "—" if v is None else f % v  # noqa: E731
    lines = [
        "# specd serve vs llama-server, side by side", "",
        "Command: `%s`" % report["command"], "",
        "Machine: %s, %s CPUs, load average at start %s. Target `%s`, draft `%s`, %d threads "
        "each, a slot per concurrent request, %d tokens of context per slot, %s KV caches; "
        "greedy, %d tokens per request, %d requests a cell, %d repeats (arms interleaved, "
        "rotating); llama-server's prompt cache off (`cache_prompt: false`), specd's prefix "
        "cache off (`prefix_cache = false`)." % (
            m.get("cpu", "?"), m.get("cpus"), " ".join(m.get("loadavg_at_start", [])),
            a["target"], a["draft"], a["threads"], a["context"], a["kv_type"], a["max_tokens"],
            report["requests_per_cell"], a["repeats"]), "",
        "specd draft: `k = %s`, rule `rejection`. llama.cpp draft: `-md --spec-type "
        "draft-simple --spec-draft-n-max %d`, or `--spec-type draft-mtp` with --draft mtp (its other speculative settings at their "
        "defaults)." % (
            a["k"], a["peer_draft_max"]), "",
        "| c | arm | tok/s (min–max) | vs specd off | vs llama.cpp off | specd draft ÷ "
        "llama.cpp draft | TTFT p50 (ms) | TPOT p50 (ms) | errors |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in report["cells"]:
        lines.append("| %d | %s | %s (%s–%s) | %s | %s | %s | %s | %s | %d |" % (
            c["concurrency"], c["arm"], fmt(c["throughput_tok_s"]), fmt(c["throughput_min"]),
            fmt(c["throughput_max"]), fmt(c["vs specd off"], "%.2f×"),
            fmt(c["vs llama.cpp off"], "%.2f×"),
            fmt(c["specd draft vs llama.cpp draft"], "%.2f×") if c["arm"] == "specd draft" else "",
            fmt(c["ttft_ms_p50"]), fmt(c["tpot_ms_p50"]), len(c["errors"])))
    lines += ["", "Greedy texts identical across the four arms, request for request: %s." % (
        "yes" if report["texts_identical_across_arms"] else "**NO**"), ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
