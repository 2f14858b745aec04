// report.md: the bench's tables. `bench` shows every arm against plain decoding; `ab` adds
// the pairwise comparison against the first arm.
#pragma once

#include <string>

#include "bench/bench_results.hpp"

namespace specd::bench {

std::string format_report_markdown(const BenchResults& results);

}  // namespace specd::bench
