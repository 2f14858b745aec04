#!/usr/bin/env python3
"""Aggregate decoding throughput of `specd serve` at several concurrencies (loopback).

    scripts/serve_concurrency.py BUILD/bin/specd CONFIG [--set k=v ...] [--levels 1,8,16]

Starts the server on a free port, sends `level` identical-length greedy completions at once
(distinct prompts, ignore_eos so each makes exactly max_tokens), and prints completion tokens
per second of wall time for each level and speculative setting. A quick check of the
continuous-batching scheduler, not the serving benchmark.
"""
import argparse
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request

PROMPTS = ["Once upon a time", "def fibonacci(n):", "The capital of France is",
           "import numpy as np", "In 1492,", "for (int i = 0; i < n; ++i) {",
           "She opened the door and", "SELECT name FROM users WHERE", "The quick brown fox",
           "1, 2, 3, 4, 5,", "Dear Sir or Madam,", "class Stack:", "It was a dark night;",
           "The mitochondria is", "To be or not to be,", "Once there was a village"]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def run_level(base, level, spec, max_tokens):
    out = [None] * level

    def one(i):
        body = {"prompt": PROMPTS[i % len(PROMPTS)], "max_tokens": max_tokens,
                "temperature": 0, "speculative": spec}
        out[i] = post(base + "/v1/completions", body)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(level)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    tokens = sum(o["usage"]["completion_tokens"] for o in out)
    return tokens / wall, tokens, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("specd")
    ap.add_argument("config")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--levels", default="1,8,16")
    ap.add_argument("--max-tokens", type=int, default=64)
    a = ap.parse_args()
    cmd = [a.specd, "serve", "-c", a.config, "--port", "0", "--set", "sampling.ignore_eos=true"]
    for s in a.set:
        cmd += ["--set", s]
    server = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        for line in server.stderr:
            m = re.search(r"listening on http://[^:]+:(\d+)", line)
            if m:
                port = int(m.group(1))
            if port is not None and "specd serve: ready" in line:  # the model is loaded
                break
        if port is None:
            sys.exit("the server did not start")
        threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
        base = f"http://127.0.0.1:{port}"
        specs = {"off": {"proposer": "none"}, "draft-model": {}, "auto": {"k": "auto"}}
        run_level(base, 1, specs["off"], 8)  # warm up
        print("| speculation | " + " | ".join(f"{l} seq tok/s" for l in a.levels.split(",")) + " |")
        print("|---|" + "---|" * len(a.levels.split(",")))
        levels = [int(x) for x in a.levels.split(",")]
        for name, spec in specs.items():
            run_level(base, max(levels), spec, 8)  # proposer instances made before timing
            row = []
            for level in levels:
                rate, _, _ = run_level(base, level, spec, a.max_tokens)
                row.append(f"{rate:.0f}")
            print(f"| {name} | " + " | ".join(row) + " |", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
