#!/usr/bin/env bash
# Greedy tokens/s over loopback: plain decoding here vs through a `specd serve` verifier
# (plain and speculative), and local speculative decoding for reference.
#   scripts/remote_verify_bench.sh [build/bin/specd] [port] [max_tokens]
# The server runs in the background for the measurement and is stopped at the end.
set -euo pipefail
specd=${1:-build/bin/specd}
port=${2:-18467}
n=${3:-128}
root=$(cd "$(dirname "$0")/.." && pwd)
prompts=("def fibonacci(n):" "Once upon a time" "The quick brown fox")
common=(--set engine.backend=\"cpu\" --set engine.threads=1 --set sampling.temperature=0.0
  --set proposer.mode=\"sample\")
url=(--set verifier.url=\"http://127.0.0.1:$port\")

"$specd" serve -c "$root/configs/serve.toml" --port "$port" --set engine.threads=1 \
  --set engine.backend=\"cpu\" 2>/tmp/specd-remote-bench-server.log &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  grep -q "specd serve: ready" /tmp/specd-remote-bench-server.log 2>/dev/null && break
  sleep 0.1
done

# Prints the decode tokens/s (all prompts' tokens over their time) and the mean tau of one
# arm: a configuration and its overrides.
arm() {
  local name=$1 config=$2
  shift 2
  local stats=""
  for p in "${prompts[@]}"; do
    stats+=$("$specd" run -c "$root/configs/$config" "${common[@]}" "$@" -n "$n" -p "$p" --json)
    stats+=$'\n'
  done
  python3 -c '
import json, sys
text, at, runs = sys.stdin.read(), 0, []
decoder = json.JSONDecoder()
while text[at:].strip():
    at += len(text[at:]) - len(text[at:].lstrip())
    obj, at = decoder.raw_decode(text, at)
    runs.append(obj["stats"])
tokens = sum(r["generated_tokens"] for r in runs)
seconds = sum(r["generate_s"] for r in runs)
tau = sum(r["tau"] for r in runs) / len(runs)
verify_ms = 1e3 * sum(r["verify_s"] for r in runs) / sum(r["rounds"] for r in runs)
draft_ms = 1e3 * sum(r["draft_s"] for r in runs) / sum(r["rounds"] for r in runs)
print(f"{sys.argv[1]:<36} {tokens / seconds:8.1f} tok/s   tau {tau:.2f}   "
      f"per round: draft {draft_ms:.2f} ms, verify {verify_ms:.2f} ms")' "$name" <<<"$stats"
}

echo "greedy, $n tokens x ${#prompts[@]} prompts, 1 thread each side, loopback port $port"
arm "plain, local target" draft-model.toml --set proposer.kind=\"none\"
arm "draft-model k=4, local target" draft-model.toml
arm "plain, remote target" remote.toml "${url[@]}" --set proposer.kind=\"none\"
arm "draft-model k=4, remote target" remote.toml "${url[@]}"
arm "draft-model k=auto, remote target" remote.toml "${url[@]}" --set proposer.k=\"auto\"
