// Writes a bench's reports into a folder: report.json, report.md, speedup.svg,
// per_position.svg, predicted.svg.
#pragma once

#include <string>

#include "bench/bench_results.hpp"

namespace specd::bench {

// Creates `dir` if needed; throws Error naming a file that cannot be written.
void write_reports(const BenchResults& results, const std::string& dir);

}  // namespace specd::bench
