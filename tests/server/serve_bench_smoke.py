#!/usr/bin/env python3
"""Smoke test of bench/serve/serve_bench.py: tiny settings (2 concurrency levels, 1 prompt,
8 tokens, the default modes on / auto / off, 2 repeats), then the report's shape: a cell per
mode and level with its 2 runs and tokens counted, throughput against off paired by repeat
(median and spread), the markdown table, a well-formed SVG.

usage: serve_bench_smoke.py SPECD_CLI OUT_DIR     (exit 0 = pass, 77 = skipped)
"""

import json
import os
import subprocess
import sys
import xml.dom.minidom

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    specd, out = sys.argv[1], sys.argv[2]
    if not os.path.exists(os.path.join(ROOT, "models", "target.gguf")):
        print("skipped: the shipped models are missing")
        return 77
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "serve", "serve_bench.py"),
                        "--specd", specd, "--concurrency", "1,2", "--tasks", "code,prose",
                        "--prompts", "1", "--max-tokens", "8", "--repeats", "2", "--out", out], timeout=240)
    problems = []
    if r.returncode != 0:
        problems.append("serve_bench.py exited %d" % r.returncode)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    cells = {(c["mode"], c["concurrency"]): c for c in report["cells"]}
    modes = ("on", "auto", "off")
    if set(cells) != {(m, level) for m in modes for level in (1, 2)}:
        problems.append("cells: %r" % sorted(cells))
    for key, c in cells.items():
        if c["completed"] != 4 or c["errors"]:
            problems.append("%r: %d of 4 completed, errors %r" % (key, c["completed"], c["errors"]))
        runs = c.get("runs", [])
        if len(runs) != 2 or any(r["completed"] != 2 for r in runs):
            problems.append("%r: runs %r" % (key, runs))
        tput = [r["throughput_tok_s"] for r in runs]
        if len(tput) == 2 and abs(c["throughput_tok_s"] - sum(tput) / 2) > 0.01:
            problems.append("%r: throughput %r is not the median of %r" % (
                key, c["throughput_tok_s"], tput))
        if not c["completion_tokens"] or not c["throughput_tok_s"] or c["ttft_ms_p50"] is None:
            problems.append("%r: missing measurements %r" % (key, c))
    if cells.get(("off", 1), {}).get("drafted") != 0:
        problems.append("speculation off drafted tokens: %r" % cells.get(("off", 1)))
    if not cells.get(("on", 1), {}).get("drafted"):
        problems.append("speculation on drafted nothing: %r" % cells.get(("on", 1)))
    if report.get("speculative", {}).get("auto", {}).get("k") != "auto":
        problems.append("the auto mode does not ask for k = auto: %r" % report.get("speculative"))
    for key, c in cells.items():
        if key[0] != "off" and (c.get("texts_equal_off") is not True or not c.get("vs_off")):
            problems.append("%r: texts_equal_off %r, vs_off %r" % (
                key, c.get("texts_equal_off"), c.get("vs_off")))
        if key[0] != "off":
            ratios = c.get("vs_off_runs") or []
            off = cells.get(("off", key[1]), {}).get("runs", [])
            paired = [round(r["throughput_tok_s"] / o["throughput_tok_s"], 3)
                      for r, o in zip(c.get("runs", []), off)]
            if len(ratios) != 2 or ratios != paired or not (
                    c["vs_off_min"] <= c["vs_off"] <= c["vs_off_max"]):
                problems.append("%r: paired ratios %r (expected %r), vs_off %r in %r..%r" % (
                    key, ratios, paired, c.get("vs_off"), c.get("vs_off_min"),
                    c.get("vs_off_max")))
    if report.get("server_exit_status") != 0:
        problems.append("server exit status %r" % report.get("server_exit_status"))
    with open(os.path.join(out, "report.md")) as f:
        rows = [line for line in f if line.startswith(tuple("| %s " % m for m in modes))]
    if len(rows) != 6:
        problems.append("report.md has %d table rows, expected 6" % len(rows))
    svg = xml.dom.minidom.parse(os.path.join(out, "serve.svg"))
    if len(svg.getElementsByTagName("rect")) < 13:
        problems.append("serve.svg has too few bars")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
