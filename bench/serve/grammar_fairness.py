#!/usr/bin/env python3
"""Does an expensive grammar slow the requests beside it? (python3 standard library only)

    python3 bench/serve/grammar_fairness.py --specd build/bin/specd [--baseline OTHER/specd]

On the shipped models: one request with n = 8 choices under a grammar of 9,500 alternatives
(masks of thousands of live parses, a few ms each), 100 tokens, and beside it a client
sending 16-token plain completions one after another. Prints the median latency of that
client alone and while the grammar request runs, and how long the grammar request took,
per build (interleaved over --repeats; medians).
"""

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from specd_server import Server, request, write_config  # noqa: E402

GRAMMAR = "root ::= item+\nitem ::= (" + " | ".join('"w%05d "' % i for i in range(9500)) + ")\n"


def latency(port, n=5):
    times = []
    for _ in range(n):
        t = time.monotonic()
        status, _ = request(port, "POST", "/v1/completions",
                            {"prompt": "Once upon a time", "max_tokens": 16})
        if status != 200:
            raise RuntimeError("a plain request failed: %d" % status)
        times.append(time.monotonic() - t)
    return statistics.median(times)


def measure(binary, config):
    with Server(binary, config) as server:
        alone = latency(server.port)
        took = []

        def heavy():
            t = time.monotonic()
            status, _ = request(server.port, "POST", "/v1/completions",
                                {"prompt": "a", "max_tokens": 100, "grammar": GRAMMAR, "n": 8})
            took.append((time.monotonic() - t, status))

        thread = threading.Thread(target=heavy)
        thread.start()
        time.sleep(1.0)
        beside = latency(server.port)
        thread.join()
        server.stop()
    if took[0][1] != 200:
        raise RuntimeError("the grammar request failed: %d" % took[0][1])
    return alone, beside, took[0][0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--specd", default="build/bin/specd")
    ap.add_argument("--baseline", help="another build's specd binary, measured alongside")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    builds = {"specd": args.specd}
    if args.baseline:
        builds["baseline"] = args.baseline
    got = {b: [] for b in builds}
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(os.path.join(tmp, "serve.toml"),
                              "queue_limit = 64\nmax_sequences = 16\nmax_body_bytes = 4000000\n")
        for repeat in range(args.repeats):
            for build, binary in builds.items():
                r = measure(binary, config)
                got[build].append(r)
                print("repeat %d %-8s alone %.3f s, beside the grammar %.3f s, grammar request "
                      "%.2f s" % ((repeat, build) + r), flush=True)
    print("\n| build | 16 tokens alone, s | beside the grammar request, s | grammar request, s |")
    print("|---|---:|---:|---:|")
    for build, rows in got.items():
        print("| %s | %.3f | %.3f | %.2f |" % (
            (build,) + tuple(statistics.median(r[i] for r in rows) for i in range(3))))


if __name__ == "__main__":
    main()
