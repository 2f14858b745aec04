// Drawing one token from a probability row with the host's random number generator.
#pragma once

#include <cstdint>
#include <span>

#include "plugin/host_services.hpp"

namespace specd {

// Inverse-CDF draw: one uniform u in [0,1) from `rng`, returns the first index whose
// cumulative mass exceeds u * total. Zero-probability entries are never returned (rounding
// at the top end falls back to the last positive entry). The row need not be normalised.
// This is the SDK's routine (specd/cpp/distribution.hpp, shared with every plugin): a row
// with a negative, NaN or infinite entry, or a zero or overflowing total, is refused with
// specd::Error saying which.
uint32_t sample(std::span<const double> row, Rng& rng);

// The same with a given uniform u in [0,1) (for common random numbers and tests).
uint32_t sample_with_uniform(std::span<const double> row, double u);

}  // namespace specd
