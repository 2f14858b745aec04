#!/usr/bin/env bash
# specd serve driven by the official openai npm client (version pinned in
# openai-node/package-lock.json). Usage: openai_client_test.sh SPECD_CLI SOURCE_DIR WORK_DIR
# Exits 77 (skipped) when Node 20+ is missing or `npm ci` cannot fetch the pinned package.
set -euo pipefail
cli=$1 src=$2 work=$3
here="$src/tests/server/openai-node"
mkdir -p "$work"
cd "$work"
if ! node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' 2>/dev/null; then
  echo "skipped: Node 20 or later is not installed"; exit 77
fi
cp "$here/package.json" "$here/package-lock.json" "$here/client.mjs" .
if ! timeout 300 npm ci --no-audit --no-fund --loglevel=error; then
  echo "skipped: npm ci could not install the pinned openai package"; exit 77
fi
key=openai-test-key
cat > serve.toml <<TOML
[engine]
backend = "cpu"
threads = 1
seed = 1
[target]
model = "$src/models/target.gguf"
[proposer]
kind = "draft-model"
model = "$src/models/draft.gguf"
k = 3
[acceptance]
rule = "rejection"
[sampling]
temperature = 0.0
max_tokens = 24
[server]
port = 0
api_key = "$key"
chat_template = "chatml"
TOML
expected=$(timeout 120 "$cli" run -c serve.toml -p "Once upon a time" -n 24 --json |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).text))')
rm -f serve.log
timeout 300 "$cli" serve -c serve.toml 2> serve.log &
server=$!
# $server is timeout(1): kill what it runs too, or a failed check leaves the server up.
trap 'pkill -KILL -P $server 2>/dev/null; kill -KILL $server 2>/dev/null || true' EXIT
port=
for _ in $(seq 1 1200); do
  # The port opens before the model loads: wait for the line that says it is ready.
  grep -q "specd serve: ready" serve.log && port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)$|\1|p' serve.log)
  [ -n "$port" ] && break
  kill -0 $server 2>/dev/null || { cat serve.log; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "the server never listened"; cat serve.log; exit 1; }
SPECD_BASE_URL="http://127.0.0.1:$port/v1" SPECD_API_KEY=$key SPECD_EXPECTED_TEXT="$expected" \
  timeout 300 node client.mjs
kill -TERM $server
wait $server
status=$?
trap - EXIT
[ $status -eq 0 ] || { echo "specd serve exited $status after SIGTERM"; cat serve.log; exit 1; }
