// The constructed-model sweep of a bench file's [construct] section: targets of each size
// and weight type, drafts of each agreement, arms of each agreement × k (draft-model,
// greedy drafting), written into a temporary folder at bench time (never committed).
#pragma once

#include <string>

#include "bench/bench_config.hpp"
#include "bench/bench_runner.hpp"

namespace specd::bench {

// Writes the models under `dir` and returns the plan: one cell per size × type × temperature
// (task "constructed-<size>-<type>"), one arm per agreement × k.
RunPlan plan_constructed(const BenchConfig& config, const std::string& mode,
                         const std::string& dir);

}  // namespace specd::bench
