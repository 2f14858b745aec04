// What a scheduler's step costs, for planning its drafts (core/batching/step_planner.hpp).
//
// PassTime: the target pass over M rows, T(M). Its shape is measured once (calibrate(): a
// few passes at each of a set of row counts, the median of each) because it is far from a
// line: on a CPU a pass is bound by reading the weights up to about 8 rows (16 rows cost
// little more than 1) and by compute beyond (each further row costs about the same), and a
// GPU's knee lies elsewhere. Between the calibrated row counts T is interpolated, past the
// last one extended along its last segment. The steps themselves then keep it current:
// attention grows with the sequences' contexts and other processes come and go, so every
// observed pass (its rows, its seconds) moves one scale factor (observed ÷ calibrated,
// averaged with exponential forgetting) that multiplies the whole curve. A calibration
// taken on a busy machine also gets its shape wrong (on a shared 2-core VM two passes of a
// size vary by a quarter), and a plan that believes 48 rows cost 2.4 times 12 drafts where
// they cost 3.5 times; so what an observed pass leaves unexplained after the scale also
// corrects the two calibrated counts around its rows (by their share in the interpolation,
// in log space, with the same forgetting), and the curve takes the shape the steps show
// where the server runs.
//
// DraftTime: a proposer's call over a step's drafting sequences, fitted as
//   t = a · steps + b · rows
// (steps: the longest draft, each of whose positions is one batched pass of a draft model;
// rows: the drafted tokens and the rows of catch-up), by least squares with exponential
// forgetting. A proposer's first call (a warm-up) is not a sample, and until three calls are
// timed drafting is taken as free, so that it gets tried and measured.
//
// Thread rule: one thread at a time (the scheduler's worker).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace specd {

class PassTime {
 public:
  explicit PassTime(double decay = 0.05) : decay_(decay) {}
  // Times `time_pass(rows)` `repeats` times for each of `rows` (increasing), in `repeats`
  // rounds over all of them, and keeps the medians. A call replaces an earlier calibration.
  void calibrate(std::span<const uint32_t> rows, uint32_t repeats,
                 const std::function<double(uint32_t rows)>& time_pass);
  bool calibrated() const { return !rows_.empty(); }
  // A pass over `rows` rows took `seconds` (the scale follows it).
  void observe(uint32_t rows, double seconds);
  // Estimated seconds of a pass over `rows` (> 0) rows now; proportional to the rows before
  // calibration.
  double time(uint32_t rows) const;
  double scale() const { return scale_; }

 private:
  // The calibrated counts around `rows`: lo and hi, and rows' share of the way from lo to hi.
  struct Bracket {
    size_t lo, hi;
    double share;
  };
  Bracket bracket(uint32_t rows) const;
  double point(size_t i) const;  // count i's seconds, corrected
  double calibrated_time(uint32_t rows) const;
  double decay_;
  std::vector<uint32_t> rows_;
  std::vector<double> seconds_;
  std::vector<double> log_fix_;  // per calibrated count: the steps' correction, in log space
  double scale_ = 1;
  uint64_t observed_ = 0;
};

class DraftTime {
 public:
  explicit DraftTime(double decay = 0.05) : decay_(decay) {}
  void observe(uint32_t steps, uint32_t rows, double seconds);
  double time(uint32_t steps, uint32_t rows) const;
  uint64_t observations() const { return n_; }

 private:
  static constexpr uint64_t kSettled = 3;
  double decay_;
  double sss_ = 0, ssr_ = 0, srr_ = 0, sst_ = 0, srt_ = 0;  // decayed sums of products
  uint64_t n_ = 0;
  bool warmed_ = false;
};

}  // namespace specd
