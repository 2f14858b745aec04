#include "sampling/sample_row.hpp"

#include "common/error.hpp"
#include "specd/cpp/distribution.hpp"

namespace specd {

uint32_t sample_with_uniform(std::span<const double> row, double u) {
  // The SDK's routine, the one the plugins use: the same draw and the same refusals.
  const sdk::RowCheck c = sdk::check_row(row);
  if (!c.ok()) throw Error("sample: cannot draw from this row: " + c.problem);
  return sdk::draw_checked(row, c.total, u);
}

uint32_t sample(std::span<const double> row, Rng& rng) {
  return sample_with_uniform(row, rng.uniform());
}

}  // namespace specd
