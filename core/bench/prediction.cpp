#include "bench/prediction.hpp"

#include <algorithm>
#include <cmath>

namespace specd::bench {

double expected_tokens(double alpha, double k) {
  alpha = std::clamp(alpha, 0.0, 1.0);
  if (alpha >= 1.0 - 1e-12) return k + 1;  // the limit of the geometric sum
  return (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
}

double predicted_speedup(double alpha, double k, double verify_cost, double draft_cost) {
  const double cost = verify_cost + k * draft_cost;
  return cost > 0 ? expected_tokens(alpha, k) / cost : 0;
}

}  // namespace specd::bench
