#!/usr/bin/env bash
# GPU check of the CUDA backend, for a machine with an NVIDIA GPU, in under 8 minutes:
#   1. the backend op conformance suite (tests/backend) on the cuda backend only;
#   2. greedy equivalence: the engine test binary, the quantized presets (tests/quant: every
#      quantized weight type), and plain vs n-gram speculative decoding at
#      temperature 0 through `specd run` on cuda must emit the same tokens;
#   3. tokens/s of plain and speculative decoding with the shipped models (cuda, and cpu for
#      reference);
#   4. the verify-cost curve v(k) from specd-model-bench --backend (k = 1..16 and 32, as that
#      tool measures), with decode/prefill tokens/s.
# Writes a JSON summary to $OUT/gpu-check.json (or ./gpu-check.json) and prints it. Without a
# GPU (or without a CUDA build) it says why, writes {"status": "skipped", ...} and exits 0.
#
# Usage: bench/gpu-check.sh [BUILD_DIR]      (default: build-gpu if it has the cuda plugin,
#                                             else build)
#   GPU_CHECK_BUILD=1 first configures and builds BUILD_DIR with -DSPECD_WITH_CUDA=ON.
#   GPU_CHECK_BUDGET=seconds (default 450) caps the whole run; later steps are skipped.
#   GPU_CHECK_BACKEND=cpu dry-runs every step on the cpu backend (no GPU needed), to check
#   this script itself.
set -u
cd "$(dirname "$0")/.."
root=$(pwd)

build=${1:-}
if [ -z "$build" ]; then
  build=build
  [ -f build-gpu/bin/plugins/specd-backend-cuda.so ] && build=build-gpu
fi
out_dir=${OUT:-.}
mkdir -p "$out_dir"
summary="$out_dir/gpu-check.json"
work=$(mktemp -d)
mkdir -p "$work/steps"
trap 'rm -rf "$work"' EXIT
budget=${GPU_CHECK_BUDGET:-450}
backend=${GPU_CHECK_BACKEND:-cuda}
start=$(date +%s)
py=$(command -v python3 || echo /usr/bin/python3)

elapsed() { echo $(($(date +%s) - start)); }
left() { echo $((budget - $(elapsed))); }

# Each step writes $work/<name>.json (one JSON object); the summary gathers them in order.
record() {  # record NAME STATUS DETAIL_JSON
  local n
  n=$(ls "$work/steps" | wc -l)
  printf '{"step": "%s", "status": "%s", "detail": %s}\n' "$1" "$2" "$3" >"$work/steps/$n-$1.json"
}
json_str() { "$py" -c 'import json,sys; print(json.dumps(sys.stdin.read()[-4000:]))'; }

finish() {  # finish OVERALL_STATUS [REASON]
  "$py" - "$work/steps" "$summary" "$1" "${2:-}" "$build" "$(elapsed)" "$gpu" <<'EOF'
import json, os, sys
work, path, status, reason, build, secs, gpu = sys.argv[1:8]
steps = []
for name in sorted(os.listdir(work), key=lambda n: int(n.split("-", 1)[0])):
    with open(os.path.join(work, name)) as f:
        steps.append(json.load(f))
doc = {"status": status, "build": build, "gpu": gpu, "seconds": int(secs), "steps": steps}
if reason:
    doc["reason"] = reason
with open(path, "w") as f:
    json.dump(doc, f, indent=2)
print(json.dumps(doc, indent=2))
EOF
  echo "gpu-check: summary in $summary" >&2
}

gpu=""
skip() {
  echo "gpu-check: skipped: $1" >&2
  finish skipped "$1"
  exit 0
}

# ---- 0. Is there a GPU and a CUDA build? -------------------------------------------------
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null |
        head -n 1)
fi
[ "$backend" = cuda ] && [ -z "$gpu" ] &&
  skip "no NVIDIA GPU (nvidia-smi missing or lists no device)"

if [ "${GPU_CHECK_BUILD:-0}" = 1 ]; then
  echo "gpu-check: building $build" >&2
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSPECD_WITH_CUDA=ON -DSPECD_WITH_HIP=OFF \
    >"$out_dir/gpu-check-build.log" 2>&1 &&
    cmake --build "$build" -j "$(nproc)" >>"$out_dir/gpu-check-build.log" 2>&1 ||
    skip "build of $build failed (see $out_dir/gpu-check-build.log)"
fi
specd="$build/bin/specd"
[ -x "$specd" ] || skip "$specd not built (configure with -DSPECD_WITH_CUDA=ON and build)"
[ -f "$build/bin/plugins/specd-backend-$backend.so" ] ||
  skip "the $backend backend plugin is not built in $build (-DSPECD_WITH_CUDA=ON)"

plugins=$(timeout 60 "$specd" plugins --json 2>&1)
avail=$(printf '%s' "$plugins" | "$py" -c '
import json, sys
def walk(x):
    if isinstance(x, dict):
        if x.get("name") == sys.argv[1] and "available" in x:
            print("true" if x.get("available") else "false:" + str(x.get("reason", "")))
            sys.exit(0)
        for v in x.values(): walk(v)
    elif isinstance(x, list):
        for v in x: walk(v)
try:
    walk(json.loads(sys.stdin.read()))
except Exception as e:
    print("false:cannot parse specd plugins --json: %s" % e)
    sys.exit(0)
print("false:plugin not listed")' "$backend")
[ "$avail" = true ] || skip "$backend backend cannot run here: ${avail#false:}"
echo "gpu-check: backend $backend, GPU '$gpu', build $build" >&2

# ---- 1. Op conformance on cuda ---------------------------------------------------------------
run_doctest() {  # run_doctest STEP BINARY LIMIT [ENV...]
  local step=$1 bin=$2 limit=$3
  shift 3
  if [ ! -x "$bin" ]; then
    record "$step" skipped '"binary not built: '"$bin"'"'
    return
  fi
  if [ "$(left)" -lt 30 ]; then
    record "$step" skipped '"time budget spent"'
    return
  fi
  [ "$limit" -gt "$(left)" ] && limit=$(left)
  local log="$work/$step.log" rc=0
  (cd "$(dirname "$bin")" && env "$@" timeout "$limit" "./$(basename "$bin")") >"$log" 2>&1 || rc=$?
  local status=passed
  [ $rc -eq 0 ] || status=failed
  [ $rc -eq 124 ] && status=timeout
  # A backend that was skipped inside the suite did not get tested: not a pass.
  grep -q "skipping backend '$backend'" "$log" && status=failed
  local counts
  counts=$(grep -E '^\[doctest\] (test cases|assertions):' "$log" | tr -s ' ' | json_str)
  record "$step" "$status" "{\"exit\": $rc, \"counts\": $counts, \"log_tail\": $(tail -n 40 "$log" | json_str)}"
  echo "gpu-check: $step: $status" >&2
}
run_doctest conformance "$build/bin/backend_conformance_test" 180 SPECD_TEST_BACKENDS="$backend"

# ---- 2. Greedy equivalence ---------------------------------------------------------------------
# The engine test (tests/engine) compares speculative and plain greedy output on random models;
# SPECD_TEST_BACKEND asks it for the cuda backend where it supports choosing one.
run_doctest engine_greedy "$build/bin/engine_test" 150 SPECD_TEST_BACKEND="$backend" \
  SPECD_TEST_BACKENDS="$backend"
# The same on llama.cpp's quantization presets (../shared/compat/quant, every quantized type)
# and on quantized target/draft pairs (tests/quant).
run_doctest quant_greedy "$build/bin/quant_test" 120 SPECD_TEST_BACKEND="$backend" \
  SPECD_TEST_BACKENDS="$backend"
# llama.cpp's greedy text for each architecture layout (llama, qwen2, qwen3 files; skips with a
# message when ../shared/compat is not on the machine).
run_doctest compat_arch "$build/bin/compat_test" 90 SPECD_TEST_BACKEND="$backend"

# ---- 3. specd run: plain vs speculative, cuda and cpu --------------------------------------------
run_specd() {  # run_specd NAME BACKEND [--set ...]
  local name=$1 backend=$2
  shift 2
  local log="$work/$name.out" rc=0
  if [ "$(left)" -lt 20 ]; then
    record "$name" skipped '"time budget spent"'
    return
  fi
  timeout 90 "$specd" run -c configs/default.toml -p "$prompt" --set engine.backend="$backend" \
    --set sampling.temperature=0 "$@" --json </dev/null >"$log" 2>"$work/$name.err" || rc=$?
  if [ $rc -ne 0 ]; then
    record "$name" failed "{\"exit\": $rc, \"stderr\": $(tail -n 20 "$work/$name.err" | json_str)}"
  elif "$py" -c 'import json,sys; json.load(open(sys.argv[1]))' "$log" 2>/dev/null; then
    record "$name" passed "$(cat "$log")"
  else
    record "$name" failed "{\"error\": \"output is not JSON\", \"stdout\": $(json_str <"$log")}"
  fi
  echo "gpu-check: $name: exit $rc" >&2
}
prompt=${GPU_CHECK_PROMPT:-def fibonacci(n):}
run_specd run_plain "$backend"
run_specd run_ngram "$backend" --set proposer.kind=ngram
run_specd run_cpu_plain cpu
run_specd run_cpu_ngram cpu --set proposer.kind=ngram

# Same tokens from plain and speculative greedy decoding, and from cpu and cuda? (cpu vs cuda
# may legitimately differ in rounding; reported, not failed.)
"$py" - "$work" >"$work/compare.json" <<'EOF'
import json, os, sys
work = sys.argv[1]
def output(name):
    path = os.path.join(work, name + ".out")
    try:
        doc = json.load(open(path))
    except Exception:
        return None
    for key in ("tokens", "token_ids", "output_tokens", "text", "output"):
        if isinstance(doc, dict) and key in doc:
            return doc[key]
    return doc.get("result", {}).get("text") if isinstance(doc, dict) else None
def stat(name, key):
    try:
        return json.load(open(os.path.join(work, name + ".out")))["stats"][key]
    except Exception:
        return None
a, b = output("run_plain"), output("run_ngram")
c = output("run_cpu_plain")
res = {"plain_equals_ngram": None if a is None or b is None else a == b,
       "equals_cpu": None if a is None or c is None else a == c,
       "tokens_per_s": {n: stat("run_" + n, "tokens_per_s")
                        for n in ("plain", "ngram", "cpu_plain", "cpu_ngram")},
       "tau_ngram": stat("run_ngram", "tau")}
tps = res["tokens_per_s"]
if tps["plain"] and tps["ngram"]:
    res["speedup_ngram"] = tps["ngram"] / tps["plain"]
print(json.dumps(res))
EOF
eq=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["plain_equals_ngram"])' "$work/compare.json")
case "$eq" in
  True) record greedy_equivalence_cli passed "$(cat "$work/compare.json")" ;;
  False) record greedy_equivalence_cli failed "$(cat "$work/compare.json")" ;;
  *) record greedy_equivalence_cli skipped "$(cat "$work/compare.json")" ;;
esac

# ---- 4. Verify-cost curve v(k) ----------------------------------------------------------------
# specd-model-bench (bench/model) times forwards of k tokens after a fixed prefix; its --json
# holds decode/prefill tokens/s and v(k). The shipped target model if trained, else a random one.
bench="$build/bin/specd-model-bench"
model=$(sed -n 's/^model *= *"\(.*\)"/\1/p' configs/default.toml | head -n 1)
model_path="configs/$model"
if [ ! -x "$bench" ]; then
  record verify_cost skipped '"specd-model-bench not built (bench/model)"'
elif ! "$bench" --help 2>&1 | grep -q -- "--backend"; then
  record verify_cost skipped '"specd-model-bench has no --backend option"'
elif [ "$(left)" -lt 30 ]; then
  record verify_cost skipped '"time budget spent"'
else
  if [ ! -f "$model_path" ]; then
    model_path="$work/random.gguf"
    timeout 60 "$bench" --write-random "$model_path" >/dev/null 2>&1 || true
  fi
  rc=0
  timeout "$(($(left) - 10))" "$bench" "$model_path" --backend "$backend" --json >"$work/vk.out" \
    2>"$work/vk.err" || rc=$?
  if [ $rc -eq 0 ] && "$py" -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/vk.out" 2>/dev/null; then
    record verify_cost passed "{\"model\": \"$model_path\", \"result\": $(cat "$work/vk.out")}"
  else
    record verify_cost failed "{\"exit\": $rc, \"stderr\": $(tail -n 20 "$work/vk.err" | json_str)}"
  fi
fi

# ---- Summary -------------------------------------------------------------------------------------
overall=$("$py" - "$work/steps" <<'EOF'
import json, os, sys
bad = [json.load(open(os.path.join(sys.argv[1], n)))["status"] in ("failed", "timeout")
       for n in os.listdir(sys.argv[1])]
print("failed" if any(bad) else "passed")
EOF
)
finish "$overall"
[ "$overall" = passed ]
