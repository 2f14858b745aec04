// report.json: every number of a bench run, with its configuration and the machine.
#pragma once

#include <string>

#include "bench/bench_results.hpp"

namespace specd::bench {

std::string format_report_json(const BenchResults& results);

}  // namespace specd::bench
