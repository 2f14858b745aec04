#!/usr/bin/env python3
"""Structured output under speculation: decode speed and acceptance with and without a JSON
Schema constraint, plain and speculative, on one `specd serve` (python3 standard library
only). The plain arm is the same server with "speculative": {"proposer": "none"}.

Per repeat, for every prompt, four chat requests one after another (arms in rotating order):
  free / plain, free / draft, schema / plain, schema / draft
Reported per arm: median completion tok/s (completion tokens / request wall time), median
tau (tokens per target pass), and the speculative / plain ratio with and without the
schema. Greedy: plain and draft texts must be identical request for request, and a
constrained text that stopped must parse and carry the schema's required keys (a difference
fails the run).

  python3 bench/serve/grammar_bench.py --specd build/bin/specd [--target T --draft D]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import specd_server as ss

PROMPTS = [
    "Tell a story about a dog.",
    "What happened to the little girl?",
    "Describe the weather today.",
    "Was the cat happy? Answer in JSON.",
]
SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"enum": ["yes", "no"]},
        "reason": {"type": "string", "maxLength": 120},
        "score": {"type": "integer"},
    },
    "required": ["answer", "reason", "score"],
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--specd", required=True)
    ap.add_argument("--target", default=os.path.join(ss.ROOT, "models", "target.gguf"))
    ap.add_argument("--draft", default=os.path.join(ss.ROOT, "models", "draft.gguf"))
    ap.add_argument("--k", default="3")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    k = args.k if args.k == "auto" else int(args.k)
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "serve.toml")
        with open(config, "w") as f:
            f.write('[engine]\nbackend = "cpu"\nthreads = %d\nseed = 1\n[target]\nmodel = "%s"\n'
                    '[proposer]\nkind = "draft-model"\nmodel = "%s"\nk = %s\n'
                    '[acceptance]\nrule = "rejection"\n[sampling]\ntemperature = 0.0\n'
                    '[server]\nport = 0\nchat_template = "chatml"\nprefix_cache = false\n'
                    % (args.threads, os.path.abspath(args.target), os.path.abspath(args.draft),
                       json.dumps(k)))
        arms = [("free", "plain"), ("free", "draft"), ("schema", "plain"), ("schema", "draft")]
        speed = {a: [] for a in arms}
        tau = {a: [] for a in arms}
        failures = []
        with ss.Server(args.specd, config) as server:
            for rep in range(args.repeats):
                for p, prompt in enumerate(PROMPTS):
                    texts = {}
                    order = arms[(rep + p) % 4:] + arms[:(rep + p) % 4]
                    for arm in order:
                        body = {"messages": [{"role": "user", "content": prompt}],
                                "max_tokens": args.max_tokens, "temperature": 0}
                        if arm[0] == "schema":
                            body["response_format"] = {"type": "json_schema", "json_schema": {
                                "name": "verdict", "strict": True, "schema": SCHEMA}}
                        if arm[1] == "plain":
                            body["speculative"] = {"proposer": "none"}
                        t0 = time.monotonic()
                        status, out = ss.request(server.port, "POST", "/v1/chat/completions", body,
                                                 timeout=600)
                        wall = time.monotonic() - t0
                        if status != 200:
                            sys.exit("request failed: %s %s" % (status, out))
                        usage = out["usage"]
                        speed[arm].append(usage["completion_tokens"] / wall)
                        tau[arm].append(usage.get("tau", 1.0))
                        choice = out["choices"][0]
                        texts[arm] = choice["message"]["content"]
                        if arm[0] == "schema" and choice["finish_reason"] == "stop":
                            try:
                                parsed = json.loads(texts[arm])
                                assert set(SCHEMA["required"]) <= set(parsed), parsed
                                assert parsed["answer"] in ("yes", "no"), parsed
                            except (ValueError, AssertionError) as e:
                                failures.append("%r: output does not match: %s" % (prompt, e))
                    for kind in ("free", "schema"):
                        if texts[(kind, "plain")] != texts[(kind, "draft")]:
                            failures.append("%r %s: draft text differs from plain" % (prompt, kind))

    med = {a: statistics.median(v) for a, v in speed.items()}
    print("%-16s %10s %8s" % ("arm", "tok/s", "tau"))
    for a in arms:
        print("%-16s %10.1f %8.2f" % ("/".join(a), med[a], statistics.median(tau[a])))
    for kind in ("free", "schema"):
        print("%s: draft / plain = %.2fx" % (kind, med[(kind, "draft")] / med[(kind, "plain")]))
    print("schema / free, plain = %.2fx; draft = %.2fx" % (
        med[("schema", "plain")] / med[("free", "plain")],
        med[("schema", "draft")] / med[("free", "draft")]))
    if failures:
        print("\n".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
