#!/usr/bin/env bash
# The whole ctest suite under AddressSanitizer + UndefinedBehaviorSanitizer (preset "asan",
# build-asan/). Plugins are MODULE libraries built in the same tree, so they get the same
# -fsanitize flags; the sanitizer runtime comes from the executables that dlopen them.
#   JOBS=2 scripts/test-asan.sh [extra ctest args, e.g. -L unit]
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
cmake --preset asan
cmake --build build-asan -j "$JOBS"
# Leaks are errors; UB halts with a stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:fast_unwind_on_malloc=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-asan
ctest --output-on-failure -j "$JOBS" "$@"
