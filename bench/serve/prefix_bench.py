#!/usr/bin/env python3
"""The prefix cache under `specd serve`: time to first token for chat requests that share a
long system prompt, and throughput on prompts that share nothing, with [server]
prefix_cache on and off (python3 standard library only).

Per repeat, each server (cache on, cache off; started once, arms alternating which goes
first) gets:
  wave 1  `--concurrency` chat requests at once, a fresh system prompt of about
          `--system-tokens` tokens (new text every repeat, so the cache starts cold) and a
          question each;
  wave 2  as many again with the same system prompt and other questions;
  apart   as many requests whose prompts share nothing (distinct texts), for throughput.
Reported: TTFT p50 per wave and arm, wave 2 / wave 1, throughput of `apart` on / off
(paired by repeat), the prefix hit rows from /metrics. Greedy: every text must be the same
with the cache on and off, request for request (a difference fails the run).

  python3 bench/serve/prefix_bench.py --specd build/bin/specd --target T.gguf [--draft D.gguf]
"""

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time

import specd_server as ss

WORDS = ("river", "stone", "market", "lantern", "harbor", "winter", "garden", "signal", "copper",
         "meadow", "engine", "letter", "forest", "bridge", "candle", "silver", "window", "thunder")


def text_of(rng, words):
    return " ".join(rng.choice(WORDS) for _ in range(words))


def write_config(path, args, prefix_cache):
    proposer = ('[proposer]\nkind = "draft-model"\nmodel = "%s"\nk = "auto"\n' %
                os.path.abspath(args.draft) if args.draft else '[proposer]\nkind = "none"\n')
    with open(path, "w") as f:
        f.write('[engine]\nbackend = "cpu"\nthreads = %d\nseed = 1\ncontext = %d\nkv_type = "%s"\n'
                '[target]\nmodel = "%s"\n%s[acceptance]\nrule = "rejection"\n'
                '[sampling]\ntemperature = 0.0\n'
                '[server]\nport = 0\nmax_sequences = %d\nqueue_limit = 64\n'
                'chat_template = "chatml"\nprefix_cache = %s\nmax_prefill_rows = %d\n'
                % (args.threads, args.context, args.kv_type, os.path.abspath(args.target), proposer,
                   args.concurrency, "true" if prefix_cache else "false", args.max_prefill_rows))
    return path


def wave(port, bodies):
    """The bodies streamed at once: per request (TTFT s, completion tokens, text), wall s."""
    out = [None] * len(bodies)

    def one(i):
        t0 = time.monotonic()
        status, events = ss.stream(port, "/v1/chat/completions", bodies[i], timeout=1800)
        if status != 200:
            raise RuntimeError("status %d: %r" % (status, events))
        text, first, tokens = "", None, 0
        for t, data in events:
            if data == "[DONE]":
                continue
            choices = data.get("choices") or []  # the usage chunk has none
            piece = (choices[0]["delta"].get("content") or "") if choices else ""
            if piece and first is None:
                first = t
            text += piece
            if data.get("usage"):
                tokens = data["usage"]["completion_tokens"]
        out[i] = ((first or time.monotonic()) - t0, tokens, text)

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if any(o is None for o in out):
        raise RuntimeError("a request failed")
    return out, time.monotonic() - t0


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--specd", default=os.path.join(ss.ROOT, "build", "bin", "specd"))
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", help="a draft model (k = auto); plain decoding without")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--context", type=int, default=2048)
    ap.add_argument("--kv-type", default="f16", choices=("f32", "f16", "q8_0"))
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--system-tokens", type=int, default=1000)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--apart-tokens", type=int, default=64, help="max_tokens of `apart`")
    ap.add_argument("--max-prefill-rows", type=int, default=0,
                    help="[server] max_prefill_rows of both arms (0 = no limit)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="bench-prefix-out")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(20261203)
    arms = {"on": [], "off": []}
    texts_differ = 0
    hit_rows = {}
    with tempfile.TemporaryDirectory() as work:
        servers = {}
        try:
            for arm in ("on", "off"):
                servers[arm] = ss.Server(args.specd, write_config(
                    os.path.join(work, arm + ".toml"), args, arm == "on"), timeout=600)
            # Words per token of the system prompt, from one request's usage.
            probe = text_of(rng, 50)  # fits a 1024-token context at 7 tokens a word
            s, r = ss.request(servers["on"].port, "POST", "/v1/chat/completions",
                              {"messages": [{"role": "system", "content": probe}],
                               "max_tokens": 1})
            if s != 200:
                raise RuntimeError("probe: %d %r" % (s, r))
            words = max(1, int(50 * args.system_tokens / r["usage"]["prompt_tokens"]))
            for rep in range(args.repeats):
                system = text_of(rng, words)
                questions = [text_of(rng, 12) + "?" for _ in range(2 * args.concurrency)]
                apart = [text_of(rng, words // 4) for _ in range(args.concurrency)]

                def bodies(qs, sys_text=system, n=args.max_tokens):
                    return [{"messages": ([{"role": "system", "content": sys_text}]
                                          if sys_text else []) + [{"role": "user", "content": q}],
                             "max_tokens": n, "temperature": 0,
                             "stream_options": {"include_usage": True}} for q in qs]

                order = ("on", "off") if rep % 2 == 0 else ("off", "on")
                for arm in order:
                    port = servers[arm].port
                    w1, _ = wave(port, bodies(questions[:args.concurrency]))
                    w2, _ = wave(port, bodies(questions[args.concurrency:]))
                    ap_out, ap_s = wave(port, bodies(apart, None, args.apart_tokens))
                    arms[arm].append({
                        "wave1_ttft_p50_s": median([o[0] for o in w1]),
                        "wave2_ttft_p50_s": median([o[0] for o in w2]),
                        "apart_tok_s": sum(o[1] for o in ap_out) / ap_s,
                        "texts": [o[2] for o in w1 + w2 + ap_out]})
                    print("repeat %d %-3s wave 1 TTFT p50 %.3f s, wave 2 %.3f s, apart %.1f tok/s"
                          % (rep + 1, arm, arms[arm][-1]["wave1_ttft_p50_s"],
                             arms[arm][-1]["wave2_ttft_p50_s"], arms[arm][-1]["apart_tok_s"]),
                          flush=True)
                texts_differ += sum(a != b for a, b in zip(arms["on"][-1]["texts"],
                                                           arms["off"][-1]["texts"]))
            for arm in ("on", "off"):
                s, m = ss.request(servers[arm].port, "GET", "/metrics")
                hit_rows[arm] = (ss.metric(m, "specd_prefix_hit_rows_total"),
                                 ss.metric(m, "specd_prefix_prompt_rows_total"))
        finally:
            for s in servers.values():
                s.stop()
    report = {"command": " ".join([os.path.basename(sys.executable)] + sys.argv),
              "args": vars(args), "texts_differ": texts_differ, "hit_rows": hit_rows}
    for arm in ("on", "off"):
        runs = arms[arm]
        report[arm] = {k: median([r[k] for r in runs])
                       for k in ("wave1_ttft_p50_s", "wave2_ttft_p50_s", "apart_tok_s")}
        report[arm]["wave2_over_wave1"] = median(
            [r["wave2_ttft_p50_s"] / r["wave1_ttft_p50_s"] for r in runs])
    report["apart_on_over_off"] = median(
        [a["apart_tok_s"] / b["apart_tok_s"] for a, b in zip(arms["on"], arms["off"])])
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k not in ("args",)}, indent=1))
    if texts_differ:
        print("FAIL: %d texts differ between the cache on and off" % texts_differ)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
