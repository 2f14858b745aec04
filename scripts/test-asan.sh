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
# Leaks are errors; UB halts with a stack. intercept_tls_get_addr=0: with oneDNN's OpenMP
# runtime loaded through dlopen, the sanitizer's dynamic-TLS bookkeeping hands LeakSanitizer
# a bogus DTLS range and its exit-time tracer takes SIGSEGV ("Tracer caught signal 11",
# google/sanitizers#1267, fixed in later LLVM). Without the interception LSan still scans
# every thread's stack and static TLS. Stacks come from frame pointers (-fno-omit-frame-
# pointer); fast_unwind_on_malloc=0 would make every allocation 20x slower for nothing.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-asan
ctest --output-on-failure -j "$JOBS" "$@"
