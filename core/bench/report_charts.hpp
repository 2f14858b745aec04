// The bench's SVG charts. Lossy arms carry "⚠ lossy" in every legend; charts of
// constructed models say so in their titles.
#pragma once

#include <string>

#include "bench/bench_results.hpp"

namespace specd::bench {

// Speedup over plain decoding by task × temperature, one bar per arm, 95% interval whiskers.
std::string speedup_chart(const BenchResults& results);
// Acceptance rate by draft position, one line per arm and cell.
std::string per_position_chart(const BenchResults& results);
// Predicted E/(v(k)+k·c) against measured speedup, one point per arm and cell.
std::string predicted_chart(const BenchResults& results);

// The label an arm goes by in tables and legends ("name ⚠ lossy" for lossy arms).
std::string arm_label(const ArmResult& arm);
// "task T=0.7" (+ the cell's note).
std::string cell_label(const CellResult& cell);
// The title suffix for results on constructed models ("" otherwise).
std::string constructed_suffix(const BenchResults& results);

}  // namespace specd::bench
