// From per-run measurements to one cell's numbers (docs/BENCH.md, "How numbers are made").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_results.hpp"
#include "engine/generation_stats.hpp"

namespace specd::bench {

struct RunSample {
  size_t prompt = 0;
  uint32_t repeat = 0;
  double ttft_s = 0;
  GenerationStats stats;
  std::vector<int32_t> tokens;  // what was generated
};

// Per-prompt paired ratios of tokens/s (arm ÷ base, same prompt and repeat, then the median
// over repeats), one per prompt.
std::vector<double> paired_ratios(const std::vector<RunSample>& arm,
                                  const std::vector<RunSample>& base);

// Aggregates one arm's runs of a cell against plain decoding's runs of the same cell.
CellResult aggregate_cell(const std::vector<RunSample>& arm, const std::vector<RunSample>& plain,
                          bool is_plain);

// Fills speedup_vs_first (ab reports): paired against the first arm's runs.
void pair_with_first(CellResult& cell, const std::vector<RunSample>& arm,
                     const std::vector<RunSample>& first);

// The arm's verdict over its cells: "label-wrong" over "lossy" over "lossless".
std::string worst_verdict(const ArmResult& arm);

}  // namespace specd::bench
