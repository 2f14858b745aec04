#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, -fsanitize=fuzzer,address,undefined) in
# build-fuzz/ and runs each for FUZZ_SECONDS seconds from its seed corpus
# (fuzz/corpus/<target>/; new inputs go to build-fuzz/corpus/<target>/, so the committed
# seeds stay small). Crashes land in build-fuzz/crashes/<target>/ and fail the script.
#   FUZZ_SECONDS=60 JOBS=2 scripts/fuzz.sh [target ...]   (FUZZ_SECONDS=0: build only)
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
JOBS=${JOBS:-2}
CXX_FUZZ=${CXX_FUZZ:-$(command -v clang++-14 || command -v clang++)}
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(gguf config tokenizer validation request grammar)

cmake -S fuzz -B build-fuzz -DCMAKE_CXX_COMPILER="$CXX_FUZZ" >/dev/null
cmake --build build-fuzz -j "$JOBS" --target "${TARGETS[@]/#/fuzz_}"
[ "$FUZZ_SECONDS" -gt 0 ] || exit 0

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${TARGETS[@]}"; do
  rm -rf "build-fuzz/crashes/$t"
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashes/$t"
  echo "== fuzz_$t: ${FUZZ_SECONDS}s"
  # -rss_limit_mb: a parser that allocates what a header claims is a finding, not an OOM
  # of the machine. -timeout: one input taking this long is a hang.
  rc=0
  "build-fuzz/fuzz_$t" "build-fuzz/corpus/$t" "fuzz/corpus/$t" \
    -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
    -artifact_prefix="build-fuzz/crashes/$t/" -print_final_stats=1 \
    >"build-fuzz/fuzz_$t.log" 2>&1 || rc=$?
  grep -E "^#[0-9]+.*DONE|^stat::(number_of_executed_units|peak_rss)|ERROR: |^SUMMARY" \
    "build-fuzz/fuzz_$t.log" || true
  if [ "$rc" -ne 0 ] || ls "build-fuzz/crashes/$t/"* >/dev/null 2>&1; then
    echo "fuzz_$t: FOUND a crash (build-fuzz/crashes/$t/, log build-fuzz/fuzz_$t.log)"
    status=1
  fi
done
exit $status
