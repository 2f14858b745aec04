#!/usr/bin/env bash
# The main job on the shipped defaults: speculative decoding with the default config, then
# the plain-decoding baseline on the same prompt in the same run, and the comparison
# (at temperature 0 the two outputs must be identical token for token). Part 2 (skipped with
# DEMO_QUANT=0): a memory-bound constructed pair in llama.cpp's Q4_K_M, plain vs speculative,
# the speedup predicted from the measured α, v(k) and c beside the measured one.
set -euo pipefail
specd=${1:-build/bin/specd}
config=${2:-configs/default.toml}
prompt=${3:-def fibonacci(n):}
dir=$(dirname "$config")
for model in target draft; do
  if [ ! -f "$dir/../models/$model.gguf" ]; then
    echo "demo: models/$model.gguf is missing; run 'make models' to train it" >&2
    exit 1
  fi
done
echo "== specd plugins"
"$specd" plugins
echo
echo "== specd run -c $config -p '$prompt'   (speculative)"
"$specd" run -c "$config" -p "$prompt"
echo
spec_json=$("$specd" run -c "$config" -p "$prompt" --json)
plain_json=$("$specd" run -c "$config" -p "$prompt" --json --set proposer.kind=none)
python3 - "$spec_json" "$plain_json" <<'PY'
import json, sys
spec, plain = json.loads(sys.argv[1]), json.loads(sys.argv[2])
s, p = spec["stats"], plain["stats"]
print("== speculative vs plain, same prompt, same run")
print(f"  {'':12} {'tokens/s':>10} {'tau':>6} {'alpha':>6}")
print(f"  {'plain':12} {p['tokens_per_s']:10.1f} {p['tau']:6.2f} {'-':>6}")
print(f"  {spec['proposer']:12} {s['tokens_per_s']:10.1f} {s['tau']:6.2f} {s['acceptance_rate']:6.2f}")
print(f"  speedup {s['tokens_per_s'] / p['tokens_per_s']:.2f}x (one run; `specd ab` gives medians with intervals)")
same = spec["tokens"] == plain["tokens"]
print(f"  identical output: {'yes' if same else 'NO'}")
sys.exit(0 if same else 1)
PY

[ "${DEMO_QUANT:-1}" = 0 ] && exit 0
size=${DEMO_QUANT_SIZE:-95m}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo
echo "== part 2: a constructed $size target in q4_K_M (weights read from memory every token)"
"$specd" bench --construct --out "$work" --size "$size" --type q4_K_M --agreement 0.9
quant=(--set "target.model=\"$work/target.gguf\"" --set sampling.temperature=0
       --set sampling.ignore_eos=true --set sampling.max_tokens=64)
qprompt="The quick"
plain_json=$("$specd" run -c "$config" -p "$qprompt" --json "${quant[@]}" --set proposer.kind=none)
spec_json=$("$specd" run -c "$config" -p "$qprompt" --json "${quant[@]}" \
  --set proposer.kind=draft-model --set "proposer.model=\"$work/draft-0.90.gguf\"" \
  --set proposer.mode=greedy --set proposer.k=4 --set acceptance.rule=greedy)
python3 - "$spec_json" "$plain_json" <<'PY'
import json, sys
spec, plain = json.loads(sys.argv[1]), json.loads(sys.argv[2])
s, p = spec["stats"], plain["stats"]
# The Leviathan prediction from this run's measurements (core/bench/prediction.hpp):
# E = (1 - a^(k+1)) / (1 - a) tokens per round for v(k) + k c target passes.
pass_s = p["verify_s"] / p["rounds"]
a = s["acceptance_rate"]
k = s["drafted"] / s["rounds"]
v = (s["verify_s"] / s["rounds"]) / pass_s
c = (s["draft_s"] / max(s["drafted"], 1)) / pass_s
E = (1 - a ** (k + 1)) / (1 - a) if a < 1 else k + 1
predicted = E / (v + k * c)
measured = s["tokens_per_s"] / p["tokens_per_s"]
print("== q4_K_M target, f16 draft agreeing on 90% of the map, k = 4, greedy")
print(f"  plain {p['tokens_per_s']:.1f} tok/s, speculative {s['tokens_per_s']:.1f} tok/s")
print(f"  alpha {a:.2f}, v(k) {v:.2f}, c {c:.3f}: predicted {predicted:.2f}x, measured {measured:.2f}x")
same = spec["tokens"] == plain["tokens"]
print(f"  identical output: {'yes' if same else 'NO'}")
sys.exit(0 if same else 1)
PY
