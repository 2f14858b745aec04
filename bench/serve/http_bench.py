#!/usr/bin/env python3
"""Two `specd serve` builds side by side on the same configuration: requests a second
through their HTTP layers (python3 standard library only).

    python3 bench/serve/http_bench.py --specd build/bin/specd --baseline OTHER/bin/specd

Each repeat starts both servers in turn (shipped target and draft, greedy) and measures, for
each, with `--clients` threads on keep-alive connections:
  health      GET /health, the HTTP layer alone;
  complete    POST /v1/completions of 8 tokens, plain decoding (per-request "none");
  stream      the same request streamed (SSE), 32 tokens.
It prints the medians over the repeats and the ratio specd / baseline (median, min-max of
the per-repeat ratios; above 1: specd serves more).
"""

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from specd_server import Server, closed_loop, write_config  # noqa: E402

PROMPT = "The quick brown fox"


def completion(stream, tokens):
    body = {"prompt": PROMPT, "max_tokens": tokens, "speculative": {"proposer": "none"}}
    if stream:
        body["stream"] = True
    return json.dumps(body)


def one(conn, kind):
    """One request on `conn`; returns its status."""
    if kind == "health":
        conn.request("GET", "/health")
    else:
        conn.request("POST", "/v1/completions", body=completion(kind == "stream",
                                                                 32 if kind == "stream" else 8),
                     headers={"Content-Type": "application/json"})
    res = conn.getresponse()
    res.read()
    return res.status


def rate(port, kind, clients, seconds):
    """Requests a second over `seconds` from `clients` threads, each on its own connection."""
    done = [0] * clients
    failed = []
    stop_at = time.monotonic() + seconds

    def client(i):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            while time.monotonic() < stop_at:
                if one(conn, kind) != 200:
                    failed.append(kind)
                    return
                done[i] += 1
        finally:
            conn.close()

    took = closed_loop(client, clients)
    if failed:
        raise RuntimeError("a %s request failed" % kind)
    return sum(done) / took


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--specd", default="build/bin/specd")
    ap.add_argument("--baseline", required=True, help="another build's specd binary")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5.0, help="per measurement")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    kinds = ["health", "complete", "stream"]
    builds = {"specd": args.specd, "baseline": args.baseline}
    got = {(b, k): [] for b in builds for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(os.path.join(tmp, "serve.toml"),
                              "queue_limit = 64\nmax_sequences = 16\n")
        for repeat in range(args.repeats):
            for build, binary in builds.items():
                with Server(binary, config) as server:
                    for kind in kinds:
                        r = rate(server.port, kind, args.clients, args.seconds)
                        got[(build, kind)].append(r)
                        print("repeat %d %-8s %-8s %8.1f req/s" % (repeat, build, kind, r),
                              flush=True)
                    server.stop()

    print("\n| requests | specd req/s | baseline req/s | specd ÷ baseline (min-max) |")
    print("|---|---:|---:|---:|")
    for kind in kinds:
        mine, theirs = got[("specd", kind)], got[("baseline", kind)]
        ratios = [a / b for a, b in zip(mine, theirs)]
        print("| %s, %d clients | %.1f | %.1f | %.2f× (%.2f-%.2f) |" % (
            kind, args.clients, statistics.median(mine), statistics.median(theirs),
            statistics.median(ratios), min(ratios), max(ratios)))


if __name__ == "__main__":
    main()
