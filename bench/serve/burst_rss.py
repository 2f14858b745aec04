#!/usr/bin/env python3
"""Resident memory of `specd serve` before, during and after bursts of large requests
(python3 standard library only).

    python3 bench/serve/burst_rss.py --specd build/bin/specd

Two bursts of 16 concurrent requests on the shipped models: a 900 KB GBNF grammar of 75,000
alternatives (refused as too ambiguous once masked) and a JSON schema of 2,500 required
properties (answered). For each it prints the peak RSS while the burst runs, the RSS 1.5 s
after it, and after one more small request: memory that a finished or refused request used
should be back (the "after" within 50 MB of "before").
"""

import argparse
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from specd_server import Server, request, write_config  # noqa: E402


def burst(server, body, clients):
    statuses, threads = [], []
    for _ in range(clients):
        threads.append(threading.Thread(
            target=lambda: statuses.append(request(server.port, "POST", "/v1/completions", body)[0])))
    peak = 0
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        peak = max(peak, server.rss_kib())
        time.sleep(0.02)
    return sorted(set(statuses)), peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--specd", default="build/bin/specd")
    ap.add_argument("--clients", type=int, default=16)
    args = ap.parse_args()

    grammar = "root ::= (" + " | ".join('"w%06d"' % i for i in range(75000)) + ")\n"
    names = ["p%04d" % i for i in range(2500)]
    schema = {"type": "object", "properties": {n: {"type": "string"} for n in names},
              "required": names}
    bursts = [
        ("GBNF grammar, %d KB" % (len(grammar) // 1000),
         {"prompt": "a", "max_tokens": 4, "grammar": grammar}),
        ("JSON schema, 2,500 properties",
         {"prompt": "a", "max_tokens": 4,
          "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}}),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(os.path.join(tmp, "serve.toml"),
                              "queue_limit = 64\nmax_sequences = 16\nmax_body_bytes = 2000000\n")
        with Server(args.specd, config) as server:
            request(server.port, "POST", "/v1/completions", {"prompt": "a", "max_tokens": 2})
            before = server.rss_kib() / 1024
            print("| burst (%d clients) | statuses | RSS before MB | peak MB | after MB | "
                  "after one more MB |" % args.clients)
            print("|---|---|---:|---:|---:|---:|")
            for name, body in bursts:
                statuses, peak = burst(server, body, args.clients)
                time.sleep(1.5)
                after = server.rss_kib() / 1024
                request(server.port, "POST", "/v1/completions",
                        {"prompt": "a", "max_tokens": 2, "grammar": 'root ::= "x"'})
                time.sleep(1.5)
                print("| %s | %s | %.0f | %.0f | %.0f | %.0f |" % (
                    name, ",".join(map(str, statuses)), before, peak / 1024, after,
                    server.rss_kib() / 1024), flush=True)
            server.stop()


if __name__ == "__main__":
    main()
