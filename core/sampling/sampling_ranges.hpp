// The valid range of every sampling parameter, in one place: the configuration loader
// (which reports file:line:col), the CLI's options and validate_sampling_params all use
// these. Each returns "" when the value is fine, else the range it must lie in.
#pragma once

#include <cstdint>
#include <string>

namespace specd {

// The smallest positive temperature: logits are divided by it, and below about 1e-300 the
// quotient overflows to inf (a subnormal such as 1e-310 would pass "> 0" and then fail in
// the middle of a run). Anything this small is greedy in effect; 0 says so exactly.
inline constexpr double kMinTemperature = 1e-6;

std::string temperature_range(double t);  // 0, or finite and >= kMinTemperature
std::string top_k_range(int64_t k);       // >= 0
std::string top_p_range(double p);        // (0, 1]
std::string min_p_range(double p);        // [0, 1)

}  // namespace specd
