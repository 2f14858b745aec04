#!/usr/bin/env bash
# The main job on the shipped defaults: generate from the default config, then show the
# same prompt through `specd run --json` so the measured statistics are visible.
set -euo pipefail
specd=${1:-build/bin/specd}
config=${2:-configs/default.toml}
prompt=${3:-def fibonacci(n):}
model=$(sed -n 's/^model *= *"\(.*\)"/\1/p' "$config" | head -n 1)
model_path="$(dirname "$config")/$model"
if [ ! -f "$model_path" ] && [ ! -f "$model" ]; then
  echo "demo: the default model ($model_path) is missing; run 'make models' to train it" >&2
  exit 1
fi
echo "== specd plugins"
"$specd" plugins
echo
echo "== specd run -c $config -p '$prompt'"
"$specd" run -c "$config" -p "$prompt"
