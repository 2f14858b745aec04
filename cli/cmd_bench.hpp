// `specd bench -c FILE --out DIR` and `specd ab -c FILE --out DIR`: speed, acceptance and
// the lossless column of arms against plain decoding (docs/BENCH.md).
#pragma once

// argv[0] is "bench" or "ab". Returns 0 on success; throws UsageError / Error.
int run_bench_command(int argc, char** argv);
