#!/usr/bin/env python3
"""specd and llama.cpp on the same GGUF files, interleaved: plain decoding, prefill and
speculative decoding, with the ratios (python3 standard library only).

usage: side_by_side.py --llama DIR --target T.gguf [--draft D.gguf] [--threads N]
                       [--repeats R] [--specd DIR] [--k K] [--tokens N] [--prefill P]
                       [--prompt TEXT] [--kv-type T] [--json FILE]

DIR is a llama.cpp build folder holding bin/llama-bench (and, with --draft,
bin/llama-speculative-simple); --specd is specd's bin folder (default build/bin). Each of R
rounds runs, the engines' order alternating from round to round so that a drift of the
machine favours neither:

  plain and prefill  `specd-model-bench T --threads N --prefill P --json` (m = 1 decoding
                     after 64 tokens; one forward of P tokens) and `llama-bench -m T -t N
                     -p P -n 64 -o json` (tg64, ppP), each the median of 3 repeats inside;
  speculative        with --draft: `specd run` with the draft model (k = K, greedy,
                     rejection rule) and plain (`proposer.kind = none`) on PROMPT for N
                     tokens, and `llama-speculative-simple -m T -md D --spec-type
                     draft-simple --spec-draft-n-max K --temp 0 --top-k 1` on the same.

Both engines keep their KV caches in --kv-type (default f16, llama.cpp's default). It prints
each round's figures and the median of each round's ratios: specd over llama.cpp
for plain decoding, prefill and speculative decoding, and each engine's speculative over its
own plain decoding (llama.cpp's plain: its tg64). Greedy throughout; specd's speculative
output must equal its plain output (a difference fails the run).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile


def run(command, what):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"side_by_side: {what} failed ({result.returncode}): {' '.join(command)}\n"
                 f"{result.stderr[-2000:]}")
    return result


def specd_model_bench(args):
    out = run([os.path.join(args.specd, "specd-model-bench"), args.target, "--threads",
               str(args.threads), "--repeats", "3", "--prefill", str(args.prefill),
               "--kv-type", args.kv_type, "--json"],
              "specd-model-bench").stdout
    report = json.loads(out)
    return report["decode_tokens_per_s"], report["prefill_tokens_per_s"]


def llama_bench(args):
    out = run([os.path.join(args.llama, "bin", "llama-bench"), "-m", args.target, "-t",
               str(args.threads), "-p", str(args.prefill), "-n", "64", "-r", "3", "-ctk",
               args.kv_type, "-ctv", args.kv_type, "-o", "json"],
              "llama-bench").stdout
    decode = prefill = None
    for test in json.loads(out):
        if test["n_gen"] > 0 and test["n_prompt"] == 0:
            decode = test["avg_ts"]
        elif test["n_prompt"] > 0 and test["n_gen"] == 0:
            prefill = test["avg_ts"]
    if decode is None or prefill is None:
        sys.exit("side_by_side: llama-bench gave no tg64 or pp test: " + out[:500])
    return decode, prefill


def specd_run(args, config, plain):
    command = [os.path.join(args.specd, "specd"), "run", "-c", config, "-p", args.prompt,
               "--json"]
    if plain:
        command += ["--set", "proposer.kind=none"]
    report = json.loads(run(command, "specd run").stdout)
    return report["stats"]["tokens_per_s"], report["tokens"]


def llama_speculative(args):
    result = run([os.path.join(args.llama, "bin", "llama-speculative-simple"), "-m", args.target,
                  "-md", args.draft, "--spec-type", "draft-simple", "--spec-draft-n-max",
                  str(args.k), "-p", args.prompt, "-n", str(args.tokens), "-t", str(args.threads),
                  "-td", str(args.threads), "--temp", "0", "--top-k", "1", "--seed", "1", "-c",
                  "1024", "-ctk", args.kv_type, "-ctv", args.kv_type, "-ctkd", args.kv_type,
                  "-ctvd", args.kv_type], "llama-speculative-simple")
    log = result.stdout + result.stderr
    speed = re.search(r"decoded\s+\d+ tokens in\s+[\d.]+ seconds, speed:\s+([\d.]+) t/s", log)
    accept = re.search(r"accept\s*=\s*([\d.]+)%", log)
    if not speed:
        sys.exit("side_by_side: no 'decoded ... speed' line from llama-speculative-simple:\n" +
                 log[-2000:])
    return float(speed.group(1)), float(accept.group(1)) / 100 if accept else float("nan")


def write_config(args, folder):
    path = os.path.join(folder, "side_by_side.toml")
    with open(path, "w") as f:
        f.write(f"""[engine]
backend = "cpu"
threads = {args.threads}
seed = 1
kv_type = "{args.kv_type}"
[target]
model = "{os.path.abspath(args.target)}"
[proposer]
kind = "draft-model"
model = "{os.path.abspath(args.draft)}"
k = {args.k}
[acceptance]
rule = "rejection"
[sampling]
temperature = 0.0
max_tokens = {args.tokens}
ignore_eos = true
""")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama", required=True, help="a llama.cpp build folder (bin/ in it)")
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft")
    parser.add_argument("--specd", default="build/bin")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--prefill", type=int, default=512)
    parser.add_argument("--prompt", default="The quick brown fox jumps over the lazy dog.")
    parser.add_argument("--kv-type", choices=["f32", "f16", "q8_0"], default="f16")
    parser.add_argument("--json", help="also write every round's figures here")
    args = parser.parse_args()
    rounds = []
    with tempfile.TemporaryDirectory() as folder:
        config = write_config(args, folder) if args.draft else None
        for r in range(args.repeats):
            row = {}
            for engine in (["specd", "llama.cpp"] if r % 2 == 0 else ["llama.cpp", "specd"]):
                if engine == "specd":
                    row["specd_decode"], row["specd_prefill"] = specd_model_bench(args)
                    if config:
                        row["specd_spec"], spec_tokens = specd_run(args, config, plain=False)
                        row["specd_plain"], plain_tokens = specd_run(args, config, plain=True)
                        if spec_tokens != plain_tokens:
                            sys.exit("side_by_side: specd's speculative output differs from its "
                                     "plain output")
                else:
                    row["llama_decode"], row["llama_prefill"] = llama_bench(args)
                    if config:
                        row["llama_spec"], row["llama_accept"] = llama_speculative(args)
            rounds.append(row)
            line = (f"round {r + 1}: plain decode specd {row['specd_decode']:.1f} / llama.cpp "
                    f"{row['llama_decode']:.1f} tok/s; prefill {args.prefill} specd "
                    f"{row['specd_prefill']:.0f} / llama.cpp {row['llama_prefill']:.0f} tok/s")
            if config:
                line += (f"; speculative specd {row['specd_spec']:.1f} (plain run "
                         f"{row['specd_plain']:.1f}) / llama.cpp {row['llama_spec']:.1f} tok/s "
                         f"(its acceptance {row['llama_accept']:.2f})")
            print(line, flush=True)

    def median_ratio(a, b):
        return statistics.median(x[a] / x[b] for x in rounds)

    ratios = {"plain decode, specd / llama.cpp": median_ratio("specd_decode", "llama_decode"),
              f"prefill {args.prefill}, specd / llama.cpp":
                  median_ratio("specd_prefill", "llama_prefill")}
    if args.draft:
        ratios["speculative, specd / llama.cpp"] = median_ratio("specd_spec", "llama_spec")
        ratios["specd speculative / its plain run"] = median_ratio("specd_spec", "specd_plain")
        ratios["llama.cpp speculative / its tg64"] = median_ratio("llama_spec", "llama_decode")
    print(f"medians over {args.repeats} rounds ({args.threads} threads):")
    for name, value in ratios.items():
        print(f"  {name:40} {value:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rounds": rounds, "ratios": ratios}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
