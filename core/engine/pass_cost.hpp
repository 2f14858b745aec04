// The measured cost of a target pass by its total rows, for a scheduler that batches many
// sequences: a pass over M rows (every running sequence's root and draft, and prefill
// chunks) takes time(M) seconds. Verification is nearly free while a pass is memory bound
// (few rows: the weights are read once whatever M) and costs in proportion once it is
// compute bound (many rows), so the draft length that pays depends on how many rows the
// other sequences already put in the pass (AdaptiveK::set_load).
//
// The estimate is a line, T(M) = a + b·M, fitted by least squares with exponential
// forgetting (each observation weighs `decay`, older ones fade): pass times are noisy (other
// processes, caches), and every observation informs both the fixed cost a and the per-row
// cost b, so the ratio T(o + 1 + k) / T(o + 1) that adaptive k needs is stable. Forgetting
// makes the line local to the current load: at batch 1 the passes seen are of few rows
// (memory bound, b small), at batch 16 of many (compute bound). Before two distinct row
// counts are seen a pass is assumed to cost in proportion to its rows (pessimistic: drafting
// must prove itself).
//
// Likewise the slope used is the fitted one (at least 0) plus its standard error (from the
// residuals: se(b)² = residual variance ÷ (Σw · variance of the rows)), at most the slope of a line
// through the origin. Under a steady load the rows of a step barely vary (4 sequences: 4
// rows, 5 when one drafts), and on a shared machine the times are noisy: the plain fit's
// slope then rests on a few points and often comes out near 0, so that a drafted row looks
// free where it costs a fifth of the step. With the error added, extra rows count as cheap
// only once passes over varied rows show it. Thread rule: one thread at a time.
#pragma once

#include <cstdint>

namespace specd {

class PassCost {
 public:
  explicit PassCost(double decay = 0.02) : decay_(decay) {}
  void observe(uint32_t rows, double seconds);
  // Estimated seconds of a pass over `rows` rows (> 0).
  double time(uint32_t rows) const;
  double fixed_s() const;    // a
  double per_row_s() const;  // b (the fitted slope plus its standard error)
  uint64_t observations() const { return n_; }

 private:
  void fit(double& a, double& b) const;
  double decay_;
  // Decayed sums (x = rows, y = seconds).
  double w_ = 0, wx_ = 0, wxx_ = 0, wy_ = 0, wxy_ = 0, wyy_ = 0;
  uint64_t n_ = 0;
};

}  // namespace specd
