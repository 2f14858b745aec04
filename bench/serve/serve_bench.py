#!/usr/bin/env python3
"""Serving benchmark for `specd serve` (issue 16, item 7): python3 standard library only.

Starts `specd serve` on an ephemeral loopback port (or uses one already running, --port),
then for each speculation mode (per-request `speculative` object: "on" = the shipped draft
model with a fixed k = 3 and the rejection rule, named explicitly; "auto" = the same with
k = "auto", the draft length chosen per round from acceptance, draft cost and the load;
"off" = {"proposer": "none"}) and each concurrency level drives the prompts of the task suites in bench/tasks through
POST /v1/completions with "stream": true, `concurrency` requests in flight at a time.

Each (mode, concurrency) cell is run --repeats times. Within a concurrency level and a
repeat the modes run back to back, "off" first and every other repeat in reverse (off, auto,
on, on, auto, off, off, ...: a drift of the machine's speed favours no mode), so that a slow
spell hits the modes of one repeat alike, and each mode is compared with the "off" run of
its own repeat (a paired ratio). Before a level's first repeat every mode runs once at that
concurrency, untimed, with 8 tokens per request (the server's per-sequence state built).

Measured per (mode, concurrency) cell, per run (report.json "runs") and as the median over
the runs (the cell's own fields):
  throughput      completion tokens (from each stream's usage chunk) / wall time of the run
  TTFT p50/p99    request sent -> first chunk with text
  ITL p50/p99     gaps between successive text chunks of a stream as the client reads them
                  (a chunk carries one token's text; chunks written together arrive
                  together, e.g. a run speculation accepted at once)
  TPOT p50/p99    time per output token of a request: (last text - first text) / (tokens - 1)
  tau             completion tokens per target pass, over the cell (usage drafted/accepted)
  vs off          per repeat, throughput over that repeat's "off" run at the same
                  concurrency; the cell's vs_off is their median, vs_off_min / vs_off_max
                  their spread (the ratios are in vs_off_runs)

Writes OUT/report.json (every number, the command, the machine), OUT/report.md (the table)
and OUT/serve.svg (throughput and time per output token by concurrency, on vs off).

usage: serve_bench.py [--specd build/bin/specd] [--config FILE] [--port P]
                      [--concurrency 1,4,16] [--tasks code,prose,copy,free] [--prompts 8]
                      [--max-tokens 64] [--modes on,auto,off] [--repeats 1]
                      [--out bench-serve-out]
       serve_bench.py --peer LLAMA_BUILD_DIR --target T.gguf --draft D.gguf [--threads 2]
                      [--k auto] [--peer-draft-max 4] [--context 1024]
                      [--kv-type f16] [the options above]

With --peer, the side-by-side mode (side_by_side.py): specd serve and llama.cpp's
llama-server on the same target and draft, each plain and speculative, the same clients.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import side_by_side  # noqa: E402
import specd_server as ss  # noqa: E402

# "on" and "auto" keep the configured proposer and rule (the shipped draft model, or e.g. a
# hybrid target's own MTP layer) and set only k.
MODES = {
    "on": {"k": 3},
    "auto": {"k": "auto"},
    "off": {"proposer": "none"},
}


def load_prompts(tasks, per_task):
    out = []
    for name in tasks:
        path = name if os.path.exists(name) else os.path.join(ss.ROOT, "bench", "tasks",
                                                               name + ".toml")
        with open(path, "rb") as f:
            task = tomllib.load(f)
        prompts = task["prompts"][:per_task] if per_task > 0 else task["prompts"]
        out += [(task["name"], p) for p in prompts]
    return out


def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def median(values):
    return percentile(values, 50)


# Per run: counts (summed over a cell's runs) and rates / latencies (their median).
COUNTS = ("requests", "completed", "wall_s", "completion_tokens", "drafted", "accepted")
RATES = ("throughput_tok_s", "ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99",
         "tpot_ms_p50", "tpot_ms_p99", "tau")


def summarize(mode, concurrency, runs):
    """A cell from its runs (one per repeat): counts summed, the rest the runs' median."""
    cell = {"mode": mode, "concurrency": concurrency, "repeats": len(runs)}
    for key in COUNTS:
        cell[key] = round(sum(r[key] for r in runs), 4)
    for key in RATES:
        vals = [r[key] for r in runs if r[key] is not None]
        cell[key] = round(median(vals), 3) if vals else None
    tput = [r["throughput_tok_s"] or 0 for r in runs]
    cell["throughput_tok_s_min"], cell["throughput_tok_s_max"] = min(tput), max(tput)
    cell["errors"] = [e for r in runs for e in r["errors"]]
    cell["runs"] = [{k: v for k, v in r.items() if k != "texts"} for r in runs]
    cell["texts"] = [r["texts"] for r in runs]
    return cell


def compare_with_off(cell, off):
    """Paired by repeat: each run's throughput over the off run of the same repeat, and
    whether every greedy text equals off's."""
    if off is None or cell is off:
        return
    cell["texts_equal_off"] = all(t == o for t, o in zip(cell["texts"], off["texts"]))
    ratios = [round((r["throughput_tok_s"] or 0) / o["throughput_tok_s"], 3)
              for r, o in zip(cell["runs"], off["runs"]) if o["throughput_tok_s"]]
    if ratios:
        cell["vs_off_runs"] = ratios
        cell["vs_off"] = round(median(ratios), 3)
        cell["vs_off_min"], cell["vs_off_max"] = min(ratios), max(ratios)


def run_cell(port, prompts, concurrency, extra, max_tokens):
    """All prompts through the server with `concurrency` streams in flight; `extra` holds
    request fields beyond the common ones (specd's "speculative" object, another engine's
    own)."""
    lock = threading.Lock()
    pending = list(range(len(prompts)))
    records = []
    errors = []

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                i = pending.pop(0)
            task, prompt = prompts[i]
            body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                    "stream_options": {"include_usage": True}}
            body.update(extra)
            sent = time.monotonic()
            try:
                status, events = ss.stream(port, "/v1/completions", body, timeout=600)
            except Exception as e:  # noqa: BLE001 - counted as an error of the cell
                with lock:
                    errors.append(repr(e))
                continue
            end = time.monotonic()
            if status != 200:
                with lock:
                    errors.append("HTTP %d: %r" % (status, events[-1][1] if events else None))
                continue
            text_times, usage, text = [], None, ""
            for t, data in events:
                if data == "[DONE]":
                    continue
                if data.get("usage"):
                    usage = data["usage"]
                if data.get("choices") and data["choices"][0].get("text"):
                    text_times.append(t)
                    text += data["choices"][0]["text"]
            rec = {"index": i, "text": text, "task": task, "sent": sent, "end": end,
                   "ttft": (text_times[0] - sent) if text_times else None,
                   "itl": [b - a for a, b in zip(text_times, text_times[1:])],
                   "usage": usage, "tpot": None}
            n = usage["completion_tokens"] if usage else 0
            if len(text_times) >= 2 and n >= 2:
                rec["tpot"] = (text_times[-1] - text_times[0]) / (n - 1)
            with lock:
                records.append(rec)

    wall = ss.closed_loop(lambda _: worker(), concurrency)
    tokens = sum(r["usage"]["completion_tokens"] for r in records if r["usage"])
    drafted = sum(r["usage"].get("drafted_tokens", 0) for r in records if r["usage"])
    accepted = sum(r["usage"].get("accepted_tokens", 0) for r in records if r["usage"])
    passes = sum(r["usage"]["completion_tokens"] / r["usage"]["tau"]
                 for r in records if r["usage"] and r["usage"].get("tau"))
    ttft = [r["ttft"] for r in records if r["ttft"] is not None]
    itl = [x for r in records for x in r["itl"]]
    tpot = [r["tpot"] for r in records if r["tpot"] is not None]
    ms = lambda v: None if v is None else round(v * 1000.0, 3)  # noqa: E731
    return {
        "requests": len(prompts), "completed": len(records), "errors": errors,
        "wall_s": round(wall, 4), "completion_tokens": tokens,
        "throughput_tok_s": round(tokens / wall, 2) if wall > 0 else None,
        "ttft_ms_p50": ms(percentile(ttft, 50)), "ttft_ms_p99": ms(percentile(ttft, 99)),
        "itl_ms_p50": ms(percentile(itl, 50)), "itl_ms_p99": ms(percentile(itl, 99)),
        "tpot_ms_p50": ms(percentile(tpot, 50)), "tpot_ms_p99": ms(percentile(tpot, 99)),
        "drafted": drafted, "accepted": accepted,
        "tau": round(tokens / passes, 3) if passes > 0 else None,
        "texts": {r["index"]: r["text"] for r in records},
    }


def machine():
    info = {"platform": platform.platform(), "cpus": os.cpu_count(), "python": sys.version.split()[0]}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/loadavg") as f:
            info["loadavg_at_start"] = f.read().split()[:3]
    except OSError:
        pass
    try:
        info["commit"] = subprocess.run(["git", "-C", ss.ROOT, "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return info


def write_markdown(path, report):
    a = report["args"]
    lines = [
        "# specd serve benchmark", "",
        "Command: `%s`" % report["command"], "",
        "Machine: %s, %s CPUs, commit %s, load average at start %s." % (
            report["machine"].get("cpu", "?"), report["machine"].get("cpus"),
            report["machine"].get("commit", "?"),
            " ".join(report["machine"].get("loadavg_at_start", []))), "",
        "Tasks %s, %d prompts each (%d requests a cell), max_tokens %d, greedy, streamed. "
        "Speculation %s." % (
            ",".join(a["tasks"]), a["prompts"], report["requests_per_cell"], a["max_tokens"],
            "; ".join("%s = %s" % (m, json.dumps(MODES[m])) for m in a["modes"])), "",
        "Each cell: %d run%s, modes interleaved per repeat (off first, every other repeat "
        "in reverse); throughput, latencies and τ are the runs' median; vs off is the "
        "median of the paired ratios (each run over the off run of its repeat), min–max in "
        "brackets." % (
            a.get("repeats", 1), "" if a.get("repeats", 1) == 1 else "s"), "",
        "| speculation | concurrency | throughput (tok/s) | vs off | TTFT p50 (ms) "
        "| TTFT p99 (ms) | ITL p50 (ms) | ITL p99 (ms) | TPOT p50 (ms) | TPOT p99 (ms) | τ "
        "| errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    fmt = lambda v: "—" if v is None else ("%.1f" % v if isinstance(v, float) else str(v))  # noqa

    def vs_off(c):
        if c.get("vs_off") is None:
            return "—"
        if len(c.get("vs_off_runs", [])) < 2:
            return "%.2f×" % c["vs_off"]
        return "%.2f× (%.2f–%.2f)" % (c["vs_off"], c["vs_off_min"], c["vs_off_max"])
    for c in report["cells"]:
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |" % (
            c["mode"], c["concurrency"], fmt(c["throughput_tok_s"]),
            vs_off(c), fmt(c["ttft_ms_p50"]),
            fmt(c["ttft_ms_p99"]), fmt(c["itl_ms_p50"]), fmt(c["itl_ms_p99"]),
            fmt(c["tpot_ms_p50"]), fmt(c["tpot_ms_p99"]),
            "—" if c["tau"] is None else "%.2f" % c["tau"], len(c["errors"])))
    same = [c.get("texts_equal_off") for c in report["cells"]]
    if any(v is not None for v in same):
        lines += ["", "Greedy texts with speculation (every mode) equal those with it off, "
                  "request for request: %s." % (
                      "yes" if all(v is not False for v in same) else "**NO**")]
    lines += ["", "TTFT: request sent to first text chunk. ITL: gaps between successive text "
              "chunks as read by the client (chunks written together arrive together, so ITL "
              "p50 can be near 0 while p99 holds the target passes). TPOT: per request, "
              "(last text - first text) / (completion tokens - 1). τ: completion tokens per "
              "target pass. Chart: serve.svg (throughput and TPOT p50).", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def write_svg(path, report):
    """Two panels: throughput and TPOT p50 by concurrency, a bar per mode."""
    cells = report["cells"]
    modes = [m for m in report["args"]["modes"]]
    levels = sorted({c["concurrency"] for c in cells})
    colors = {"on": "#1f77b4", "auto": "#2ca02c", "off": "#ff7f0e"}
    W, H, pad = 760, 300, 50
    runs = report["args"].get("repeats", 1)
    panel_w = (W - 3 * pad) / 2
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>']
    suffix = "" if runs == 1 else ", median of %d runs" % runs
    for p, (key, title) in enumerate([("throughput_tok_s", "throughput (tokens/s)" + suffix),
                                      ("tpot_ms_p50", "time per output token p50 (ms)")]):
        x0 = pad + p * (panel_w + pad)
        y0, h = 40, H - 100
        vals = [c[key] or 0 for c in cells] + [c.get("throughput_tok_s_max") or 0
                                                for c in cells if key == "throughput_tok_s"]
        top = max(vals + [1e-9]) * 1.15
        out.append('<text x="%.1f" y="24" text-anchor="middle" font-weight="bold">%s</text>' %
                   (x0 + panel_w / 2, title))
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>' %
                   (x0, y0 + h, x0 + panel_w, y0 + h))
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>' %
                   (x0, y0, x0, y0 + h))
        for t in range(5):
            v = top * t / 4
            y = y0 + h - h * t / 4
            out.append('<text x="%.1f" y="%.1f" text-anchor="end" font-size="10">%.3g</text>' %
                       (x0 - 4, y + 3, v))
        group = panel_w / max(len(levels), 1)
        bar = group * 0.7 / max(len(modes), 1)
        for gi, level in enumerate(levels):
            gx = x0 + gi * group + group * 0.15
            out.append('<text x="%.1f" y="%d" text-anchor="middle">c=%d</text>' %
                       (x0 + gi * group + group / 2, y0 + h + 16, level))
            for mi, mode in enumerate(modes):
                c = next((c for c in cells if c["concurrency"] == level and c["mode"] == mode),
                         None)
                v = (c[key] or 0) if c else 0
                bh = h * v / top
                out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s">'
                           '<title>%s c=%d: %.3g</title></rect>' %
                           (gx + mi * bar, y0 + h - bh, bar - 2, bh, colors.get(mode, "#888"),
                            mode, level, v))
                if c and key == "throughput_tok_s" and c.get("repeats", 1) > 1:
                    # The runs' spread (min to max) over the median bar.
                    xm = gx + mi * bar + (bar - 2) / 2
                    out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>' %
                               (xm, y0 + h - h * c["throughput_tok_s_min"] / top, xm,
                                y0 + h - h * c["throughput_tok_s_max"] / top))
    for mi, mode in enumerate(modes):
        x = pad + mi * 170
        out.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>' %
                   (x, H - 28, colors.get(mode, "#888")))
        out.append('<text x="%d" y="%d">speculation %s</text>' % (x + 16, H - 18, mode))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--specd", default=os.path.join(ss.ROOT, "build", "bin", "specd"))
    ap.add_argument("--config", help="a `specd serve` configuration (default: the shipped "
                    "target + draft model, rejection, cpu, 1 thread)")
    ap.add_argument("--port", type=int, default=0, help="use a server already listening here")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--tasks", default="code,prose,copy,free")
    ap.add_argument("--prompts", type=int, default=8, help="prompts per task (0 = all)")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--modes", default="on,auto,off",
                    help="speculation modes, any of on (k = 3), auto (k = \"auto\"), off")
    ap.add_argument("--repeats", type=int, default=1,
                    help="runs of every cell, the modes interleaved; the report gives medians "
                    "and the paired ratio to off per repeat")
    ap.add_argument("--out", default="bench-serve-out")
    ap.add_argument("--peer", help="a llama.cpp build folder: the side-by-side mode against "
                    "its llama-server (needs --target and --draft)")
    ap.add_argument("--target", help="side-by-side: the target GGUF both engines serve")
    ap.add_argument("--draft", help="side-by-side: the draft GGUF both engines draft with")
    ap.add_argument("--threads", type=int, default=2, help="side-by-side: threads of each engine")
    ap.add_argument("--k", default="auto", help="side-by-side: specd's draft length (auto or N)")
    ap.add_argument("--peer-draft-max", type=int, default=4,
                    help="side-by-side: llama-server's --spec-draft-n-max")
    ap.add_argument("--kv-type", default="f16", choices=("f32", "f16", "q8_0"),
                    help="side-by-side: both engines' KV cache type (llama-server's default f16)")
    ap.add_argument("--context", type=int, default=1024,
                    help="side-by-side: llama-server's context per slot (the model's, at most)")
    a = ap.parse_args()
    if a.repeats < 1:
        ap.error("--repeats: %d; at least 1" % a.repeats)
    if a.peer:
        if not a.target or not a.draft:
            ap.error("--peer needs --target and --draft (the files both engines serve)")
        if a.k != "auto" and not a.k.isdigit():
            ap.error("--k: %r; auto or a number" % a.k)
        return side_by_side.run(a, run_cell, load_prompts, machine)
    levels = [int(x) for x in a.concurrency.split(",")]
    modes = a.modes.split(",")
    for m in modes:
        if m not in MODES:
            ap.error("--modes: unknown mode %r (on, auto, off)" % m)
    prompts = load_prompts(a.tasks.split(","), a.prompts)
    os.makedirs(a.out, exist_ok=True)

    work = tempfile.TemporaryDirectory()
    server = None
    port = a.port
    if not port:
        config = a.config or ss.write_config(
            os.path.join(work.name, "serve.toml"),
            # One strategy per mode stays built (each keeps its proposers and adaptive state).
            # The prefix cache off: the modes resend the same prompts, and the mode that runs
            # first would prefill what the others then take from the cache.
            "queue_limit = %d\nmax_engines = %d\nprefix_cache = false\n" %
            (max(levels + [16]), max(len(modes), 2)),
            max_tokens=a.max_tokens)
        server = ss.Server(a.specd, config)
        port = server.port
    try:
        # Warm-up: every mode's strategy built, caches touched.
        for m in modes:
            ss.stream(port, "/v1/completions", {"prompt": prompts[0][1], "max_tokens": 8,
                                                "speculative": MODES[m]})
        cells = []
        # Off first, then the others, interleaved per repeat, every other repeat in reverse
        # (see the header).
        order = sorted(modes, key=lambda m: m != "off")
        for level in levels:
            # Untimed: every mode at this concurrency once (the server's per-sequence state
            # for `level` sequences built: KV caches, proposers).
            for m in order:
                run_cell(port, prompts[:level], level, {"speculative": MODES[m]}, 8)
            runs = {m: [] for m in modes}
            for rep in range(a.repeats):
                for m in (order if rep % 2 == 0 else order[::-1]):
                    run = run_cell(port, prompts, level, {"speculative": MODES[m]},
                                   a.max_tokens)
                    runs[m].append(run)
                    print("speculation %-4s c=%-3d run %d/%d %8.1f tok/s  TTFT p50 %s ms  "
                          "ITL p50 %s ms  tau %s  errors %d" % (
                              m, level, rep + 1, a.repeats, run["throughput_tok_s"] or 0,
                              run["ttft_ms_p50"], run["itl_ms_p50"], run["tau"],
                              len(run["errors"])), flush=True)
            level_cells = [summarize(m, level, runs[m]) for m in modes]
            cells += level_cells
            # Greedy with an exact rule: speculation must not change a single text; and each
            # mode's throughput against plain decoding at this concurrency, repeat by repeat.
            off = next((c for c in level_cells if c["mode"] == "off"), None)
            for c in level_cells:
                compare_with_off(c, off)
                if c.get("texts_equal_off") is False:
                    print("speculation %s and off gave different texts at c=%d" % (c["mode"], level))
                if c.get("vs_off") is not None:
                    print("c=%-3d %-4s vs off: median %.3f (%.3f..%.3f over %d repeats)" % (
                        level, c["mode"], c["vs_off"], c["vs_off_min"], c["vs_off_max"],
                        len(c["vs_off_runs"])), flush=True)
    finally:
        status = server.stop() if server else 0
        if server:
            server.__exit__(None, None, None)
    report = {
        "command": " ".join(["python3", "bench/serve/serve_bench.py"] + sys.argv[1:]),
        "args": {"concurrency": levels, "tasks": a.tasks.split(","), "prompts": a.prompts,
                 "max_tokens": a.max_tokens, "modes": modes, "port": a.port,
                 "repeats": a.repeats},
        "speculative": {m: MODES[m] for m in modes},
        "requests_per_cell": len(prompts),
        "machine": machine(),
        "server_exit_status": status,
        "cells": [{k: v for k, v in c.items() if k != "texts"} for c in cells],
        "cell_fields": "per run in runs[]; in the cell, %s summed over the runs and %s the "
                       "runs' median; vs_off the median of the paired ratios vs_off_runs" % (
                           ", ".join(COUNTS), ", ".join(RATES)),
    }
    with open(os.path.join(a.out, "report.json"), "w") as f:
        json.dump(report, f, indent=2)
    write_markdown(os.path.join(a.out, "report.md"), report)
    write_svg(os.path.join(a.out, "serve.svg"), report)
    print("wrote %s/report.json, report.md, serve.svg" % a.out)
    failed = sum(len(c["errors"]) for c in cells)
    differ = any(c.get("texts_equal_off") is False for c in cells)
    return 1 if failed or differ or status != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
