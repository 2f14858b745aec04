#!/usr/bin/env bash
# The main job on the shipped defaults: speculative decoding with the default config, then
# the plain-decoding baseline on the same prompt in the same run, and the comparison
# (at temperature 0 the two outputs must be identical token for token).
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
