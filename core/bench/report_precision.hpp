// The weight-precision section of report.md: for each arm (its draft types merged) and
// each task × temperature (its target types merged), a table of target type × draft type
// with τ and the speedup over plain decoding of that target, and plain decoding's tokens/s
// per target type. Empty when the run has no precision axis.
#pragma once

#include <string>

#include "bench/bench_results.hpp"

namespace specd::bench {

std::string format_precision_tables(const BenchResults& results);

}  // namespace specd::bench
