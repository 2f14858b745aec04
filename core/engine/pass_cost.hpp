// The measured cost of a target pass by its total rows, for a scheduler that batches many
// sequences: a pass over M rows (every running sequence's root and draft, and prefill
// chunks) takes time(M) seconds. Verification is nearly free while a pass is memory bound
// (few rows: the weights are read once whatever M) and costs in proportion once it is
// compute bound (many rows), so the draft length that pays depends on how many rows the
// other sequences already put in the pass (AdaptiveK::set_load).
//
// Estimates are decayed means per row count, interpolated between counts that were timed;
// beyond the largest, extended along the last measured slope; before any measurement a pass
// is assumed to cost in proportion to its rows (pessimistic: drafting must prove itself).
// Thread rule: one thread at a time.
#pragma once

#include <cstdint>
#include <vector>

namespace specd {

class PassCost {
 public:
  explicit PassCost(double decay = 0.05) : decay_(decay) {}
  void observe(uint32_t rows, double seconds);
  // Estimated seconds of a pass over `rows` rows (> 0).
  double time(uint32_t rows) const;
  bool measured(uint32_t rows) const { return rows < seen_.size() && seen_[rows]; }

 private:
  double decay_;
  std::vector<double> s_;  // decayed mean seconds, index = rows
  std::vector<bool> seen_;
};

}  // namespace specd
