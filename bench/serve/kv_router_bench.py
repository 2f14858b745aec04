#!/usr/bin/env python3
"""Prefix-aware routing from KV-cache events, without any client header: two `specd serve`
replicas publish their events ([server] kv_events_endpoint); a router in this script
subscribes to both, keeps each replica's set of block hashes, and sends each request to the
replica holding the longest run of the prompt's block hashes (docs/SCALING.md, "KV-cache
events"; ties go to the replica with fewer requests in flight). The same workload is then
sent round robin. Both runs start from fresh replicas, and each reports the share of prompt
rows served from the prefix cache (specd_prefix_hit_rows_total over
specd_prefix_prompt_rows_total, summed over the replicas) and the share of the rows that could
be (the shared system prompts' full blocks).

Workload: --prompts system prompts of about 200 tokens each, every request one of them plus
a short question of its own, --clients closed-loop clients, --requests in all; each replica's
KV budget (--kv-budget rows) holds about half of the system prompts.

Then the cost of publishing: one replica's completion tokens a second with the events on and
off, interleaved --cost-repeats times, the median ratio.

Usage: kv_router_bench.py SPECD [--requests 256] [--clients 16] [--prompts 12]
(needs Debian's python3-zmq and python3-msgpack)
"""

import argparse
import os
import random
import sys
import tempfile
import threading

import msgpack
import zmq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import specd_server as ss  # noqa: E402
from specd_server import free_port, chain_hashes, closed_loop  # noqa: E402

BLOCK = 16


class ReplicaIndex(threading.Thread):
    """One replica's block hashes, from its events."""

    def __init__(self, ctx, endpoint):
        super().__init__(daemon=True)
        self.sub = ctx.socket(zmq.SUB)
        self.sub.connect(endpoint)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"kv-events")
        self.blocks = set()
        self.lock = threading.Lock()
        self.stop = False

    def run(self):
        while not self.stop:
            if not self.sub.poll(50):
                continue
            _, _, payload = self.sub.recv_multipart()
            _, events = msgpack.unpackb(payload, raw=False)
            with self.lock:
                for e in events:
                    if e[0] == "BlockStored":
                        self.blocks.update(e[1])
                    elif e[0] == "BlockRemoved":
                        self.blocks.difference_update(e[1])
                    elif e[0] == "AllBlocksCleared":
                        self.blocks.clear()

    def matched(self, hashes):
        with self.lock:
            n = 0
            while n < len(hashes) and hashes[n] in self.blocks:
                n += 1
            return n


def run(specd, args, routed):
    work = tempfile.mkdtemp(prefix="specd-kv-router-")
    ctx = zmq.Context()
    servers, indexes = [], []
    try:
        for r in range(2):
            pub = free_port()
            config = ss.write_config(
                os.path.join(work, "replica%d.toml" % r),
                'kv_events_endpoint = "tcp://127.0.0.1:%d"\nqueue_limit = 64\n'
                "kv_budget = %d\n" % (pub, args.kv_budget),
                max_tokens=args.max_tokens)
            index = ReplicaIndex(ctx, "tcp://127.0.0.1:%d" % pub)
            index.start()
            indexes.append(index)
            servers.append(ss.Server(specd, config))
        rng = random.Random(11)
        words = ["river", "stone", "lantern", "harbor", "meadow", "copper", "orchard", "signal"]
        systems = ["You are assistant %d. " % i + " ".join(rng.choice(words) for _ in range(80))
                   for i in range(args.prompts)]
        jobs = [(rng.randrange(args.prompts), "Question %d: what next?" % i)
                for i in range(args.requests)]
        in_flight = [0, 0]
        lock = threading.Lock()
        shared_rows = [0]
        next_job = [0]
        turn = [0]
        tokens_of = {}

        def tokens(text):
            if text not in tokens_of:
                _, body = ss.request(servers[0].port, "POST", "/tokenize",
                                     {"content": text, "add_special": True})
                tokens_of[text] = body["tokens"]
            return tokens_of[text]

        def client():
            while True:
                with lock:
                    if next_job[0] >= len(jobs):
                        return
                    system, question = jobs[next_job[0]]
                    next_job[0] += 1
                prompt = systems[system] + question
                toks = tokens(prompt)
                shared = len(tokens(systems[system])) // BLOCK * BLOCK
                hashes = chain_hashes(toks[:-1])
                with lock:
                    if routed:
                        scores = [index.matched(hashes) for index in indexes]
                        pick = max(range(2), key=lambda r: (scores[r], -in_flight[r]))
                    else:
                        pick = turn[0] % 2
                        turn[0] += 1
                    in_flight[pick] += 1
                    shared_rows[0] += shared
                status, _ = ss.request(servers[pick].port, "POST", "/v1/completions",
                                       {"prompt": prompt, "max_tokens": args.max_tokens})
                with lock:
                    in_flight[pick] -= 1
                if status != 200:
                    print("request failed: %s" % status, file=sys.stderr)

        seconds = closed_loop(lambda _: client(), args.clients)
        hit = rows = 0.0
        for s in servers:
            _, text = ss.request(s.port, "GET", "/metrics")
            hit += ss.metric(text, "specd_prefix_hit_rows_total")
            rows += ss.metric(text, "specd_prefix_prompt_rows_total")
        return hit / rows, hit / shared_rows[0], seconds
    finally:
        for i in indexes:
            i.stop = True
            i.join()
        for s in servers:
            s.kill()
        ctx.destroy(linger=0)


def throughput(specd, args, events):
    """Completion tokens a second of one replica under the workload, events on or off."""
    work = tempfile.mkdtemp(prefix="specd-kv-cost-")
    keys = "queue_limit = 64\n"
    if events:
        keys += 'kv_events_endpoint = "tcp://127.0.0.1:%d"\n' % free_port()
    config = ss.write_config(os.path.join(work, "serve.toml"), keys, max_tokens=args.max_tokens)
    rng = random.Random(5)
    words = ["river", "stone", "lantern", "harbor", "meadow", "copper", "orchard", "signal"]
    prompts = [" ".join(rng.choice(words) for _ in range(rng.randint(20, 80)))
               for _ in range(args.requests)]
    with ss.Server(specd, config) as server:
        next_job, done = [0], [0]
        lock = threading.Lock()

        def client():
            while True:
                with lock:
                    if next_job[0] >= len(prompts):
                        return
                    prompt = prompts[next_job[0]]
                    next_job[0] += 1
                _, body = ss.request(server.port, "POST", "/v1/completions",
                                     {"prompt": prompt, "max_tokens": args.max_tokens})
                with lock:
                    done[0] += body["usage"]["completion_tokens"]

        seconds = closed_loop(lambda _: client(), args.clients)  # (before done[0] is read)
        return done[0] / seconds


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("specd")
    p.add_argument("--requests", type=int, default=256)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--prompts", type=int, default=12)
    p.add_argument("--max-tokens", type=int, default=8)
    p.add_argument("--kv-budget", type=int, default=2048,
                   help="each replica's [server] kv_budget in rows: too small to cache every "
                        "system prompt, so that where a request goes matters")
    p.add_argument("--cost-repeats", type=int, default=3,
                   help="interleaved runs of one replica with events on and off (0: none)")
    args = p.parse_args()
    print("| routing | hit rows / prompt rows | hit rows / shared-prefix rows | seconds |")
    print("|---|---|---|---|")
    for routed in (True, False):
        share, of_shared, seconds = run(args.specd, args, routed)
        print("| %s | %.1f%% | %.1f%% | %.1f |" % ("KV events" if routed else "round robin",
                                                  100 * share, 100 * of_shared, seconds))
    if args.cost_repeats:
        ratios = []
        for _ in range(args.cost_repeats):
            on, off = throughput(args.specd, args, True), throughput(args.specd, args, False)
            ratios.append(on / off)
        ratios.sort()
        print("\nthroughput with events / without, one replica, %d clients, %d repeats: "
              "median %.3f (%s)" % (args.clients, args.cost_repeats, ratios[len(ratios) // 2],
                                    ", ".join("%.3f" % r for r in ratios)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
