#!/usr/bin/env bash
# make demo: what speculative decoding is for, then where it does not pay.
# Part 1: a memory-bound pair. A constructed 95 M-parameter llama target in llama.cpp's
# Q4_K_M with a 32000-token vocabulary (about 85 MB of weights read for every token), whose
# planted next-token map spells a text, and a one-layer draft that follows the map on 90% of
# the words; speculative (k = 4) vs plain on the same prompt, interleaved. Part 2: the shipped
# 5 M pair (configs/default.toml), trained models that fit in cache, the same comparison, and
# why the two parts differ. At temperature 0 every speculative output must equal the plain
# one token for token. Part 1's models are written once into DIR/text (4th argument, default
# build/demo) and reused by later runs.
set -euo pipefail
specd=${1:-build/bin/specd}
config=${2:-configs/default.toml}
prompt=${3:-def fibonacci(n):}
work=${4:-build/demo}
here=$(dirname "$0")
dir=$(dirname "$config")
for model in target draft; do
  if [ ! -f "$dir/../models/$model.gguf" ]; then
    echo "demo: models/$model.gguf is missing; run 'make models' to train it" >&2
    exit 1
  fi
done
text="A small draft model guesses the next few tokens; the large target checks every guess \
in one pass over its weights and keeps the longest run it agrees with, so one read of the \
weights can yield several tokens.
"
mkdir -p "$work"
echo "== specd plugins"
"$specd" plugins
echo
echo "== 1. where speculation pays: a target whose weights are read from memory every token"
echo "   a constructed 95 M-parameter target in q4_K_M, 32000 tokens, its planted map spelling a"
echo "   text (written once, then reused), and a one-layer draft that agrees on 90% of the words"
"$specd" bench --construct --out "$work/text" --size 95m --type q4_K_M --vocab 32000 \
  --agreement 0.9 --text "$text" | sed 's/^/   /'
models=$(realpath "$work")/text
part1=(-c "$here/../configs/demo-text.toml" --set "target.model=\"$models/target.gguf\""
       --set "proposer.model=\"$models/draft-0.90.gguf\"")
part1_prompt="Explain speculative decoding in one sentence."
echo
echo "== specd run ${part1[*]} -p '$part1_prompt'   (speculative)"
"$specd" run "${part1[@]}" -p "$part1_prompt"
echo
echo "== speculative vs plain, same prompt, same files"
python3 "$here/demo_compare.py" --repeats 3 --out "$work/part1.json" -- \
  "$specd" run "${part1[@]}" -p "$part1_prompt"

[ "${DEMO_SHIPPED:-1}" = 0 ] && exit 0
echo
echo "== 2. where it does not: the shipped 5 M pair, trained models that fit in cache"
echo "== specd run -c $config -p '$prompt'   (speculative)"
"$specd" run -c "$config" -p "$prompt"
echo
echo "== speculative vs plain, same prompt"
python3 "$here/demo_compare.py" --repeats 3 --out "$work/part2.json" -- \
  "$specd" run -c "$config" -p "$prompt"
python3 - "$work/part1.json" "$work/part2.json" <<'PY'
import json, sys, textwrap
big, small = (json.load(open(p)) for p in sys.argv[1:3])
round_cost = small["v"] + small["k"] * small["c"]
verdict = "more than" if round_cost > small["tau"] else "most of"
why = (f"Why the parts differ: the shipped 5 M target fits in cache, so its step is compute: "
       f"verifying {small['k'] + 1:.0f} tokens costs {small['v']:.1f} plain steps and a draft "
       f"token {small['c']:.2f} of one ({round_cost:.1f} steps a round, {verdict} the "
       f"{small['tau']:.2f} tokens a round yields with its draft's acceptance of "
       f"{small['alpha']:.2f}). The 95 M target's step is spent reading its quantized weights, "
       f"which one verify pass shares among {big['k'] + 1:.0f} tokens ({big['v']:.1f} steps), "
       f"while a draft token costs {100 * big['c']:.1f}% of a step. `specd bench` and `specd ab` "
       f"give such figures with intervals (docs/BENCH.md).")
print("== " + textwrap.fill(why, 92, subsequent_indent="   "))
PY
