// Small statistics for the bench: medians and 95% intervals over prompts.
//
// Speedup intervals are percentile-bootstrap intervals of the median over prompts of the
// per-prompt paired ratio (each prompt's ratio is itself the median over repeats). The
// bootstrap resamples prompts, the unit that varies; with few prompts the interval is wide
// and honest about it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace specd::bench {

double median(std::vector<double> values);  // 0 for an empty list
double mean(const std::vector<double>& values);
// Linear-interpolated quantile, q in [0, 1].
double quantile(std::vector<double> values, double q);

// 95% percentile-bootstrap interval of the median of `values` (resampling the values with
// replacement `resamples` times, fixed seed). A single value gives [v, v].
std::pair<double, double> bootstrap_median_ci(const std::vector<double>& values,
                                              uint32_t resamples = 2000, uint64_t seed = 1);

// 95% Student-t interval of the mean (for reference next to the bootstrap).
std::pair<double, double> t_interval(const std::vector<double>& values);

}  // namespace specd::bench
