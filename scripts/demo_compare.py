#!/usr/bin/env python3
"""Speculative vs plain decoding of one `specd run` command, as `make demo` shows it.

usage: demo_compare.py --repeats N --out FILE -- SPECD RUN-ARGUMENTS...

Runs the command with --json N times as given (speculative) and N times with
`--set proposer.kind=none` (plain), interleaved, and prints the medians of tokens/s, tau and
the acceptance rate, the speedup, whether every run wrote the same tokens (at temperature 0
the two must be identical), and the costs that decide the speedup (docs/BENCH.md): v(k), a
verify pass over k+1 rows in plain steps, and c, a draft token in plain steps, with the
speedup they predict, tau / (v(k) + k c). FILE receives those figures as JSON. Exits 1 when
the outputs differ.
"""
import argparse
import json
import statistics
import subprocess
import sys


def run(command):
    out = subprocess.run(command + ["--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    spec_runs, plain_runs = [], []
    for _ in range(args.repeats):
        spec_runs.append(run(command))
        plain_runs.append(run(command + ["--set", "proposer.kind=none"]))

    def median(runs, key):
        return statistics.median(r["stats"][key] for r in runs)

    plain_tps, spec_tps = median(plain_runs, "tokens_per_s"), median(spec_runs, "tokens_per_s")
    tau, alpha = median(spec_runs, "tau"), median(spec_runs, "acceptance_rate")
    print(f"  {'':12} {'tokens/s':>10} {'tau':>6} {'alpha':>6}   (medians of {args.repeats} "
          "runs each, interleaved)")
    print(f"  {'plain':12} {plain_tps:10.1f} {1.0:6.2f} {'-':>6}")
    print(f"  {spec_runs[0]['proposer']:12} {spec_tps:10.1f} {tau:6.2f} {alpha:6.2f}")
    speedup = spec_tps / plain_tps
    # One plain step; a verify round's cost and a draft token's in plain steps (medians).
    steps = [p["stats"]["verify_s"] / max(p["stats"]["rounds"], 1) for p in plain_runs]
    step = statistics.median(steps)
    v = statistics.median(s["stats"]["verify_s"] / max(s["stats"]["rounds"], 1) / step
                          for s in spec_runs)
    c = statistics.median(s["stats"]["draft_s"] / max(s["stats"]["drafted"], 1) / step
                          for s in spec_runs)
    k = statistics.median(s["stats"]["drafted"] / max(s["stats"]["rounds"], 1) for s in spec_runs)
    predicted = tau / (v + k * c)
    print(f"  speedup {speedup:.2f}x; verifying {k + 1:.0f} tokens costs v(k) = {v:.2f} plain "
          f"steps, a draft token c = {c:.3f}: predicted tau / (v + k c) = {predicted:.2f}x")
    reference = plain_runs[0]["tokens"]
    same = all(r["tokens"] == reference for r in spec_runs + plain_runs)
    print(f"  identical output, speculative and plain: {'yes' if same else 'NO'}")
    with open(args.out, "w") as f:
        json.dump({"speedup": speedup, "predicted": predicted, "v": v, "c": c, "k": k,
                   "tau": tau, "alpha": alpha, "plain_tokens_per_s": plain_tps, "tokens_per_s": spec_tps}, f)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
