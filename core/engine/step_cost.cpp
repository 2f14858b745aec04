#include "engine/step_cost.hpp"

#include <algorithm>
#include <cmath>

namespace specd {

void PassTime::calibrate(std::span<const uint32_t> rows, uint32_t repeats,
                         const std::function<double(uint32_t rows)>& time_pass) {
  rows_.clear();
  seconds_.clear();
  for (uint32_t r : rows)
    if (r > 0 && (rows_.empty() || r > rows_.back())) rows_.push_back(r);
  // Rounds over all the counts rather than each count's repeats back to back: a slow spell
  // of a shared machine (a second or two) then costs one sample of several counts, which
  // their medians outvote, instead of every sample of one or two neighbouring counts.
  std::vector<std::vector<double>> times(rows_.size());
  for (uint32_t i = 0; i < std::max<uint32_t>(repeats, 1); ++i)
    for (size_t j = 0; j < rows_.size(); ++j) times[j].push_back(time_pass(rows_[j]));
  for (std::vector<double>& t : times) {
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    // More rows never cost less than fewer (a noisy sample may say so).
    const double median = std::max(t[t.size() / 2], seconds_.empty() ? 0.0 : seconds_.back());
    seconds_.push_back(std::max(median, 1e-9));
  }
  log_fix_.assign(rows_.size(), 0.0);
  scale_ = 1;
  observed_ = 0;
}

PassTime::Bracket PassTime::bracket(uint32_t rows) const {
  const double x = std::max<uint32_t>(rows, 1);
  if (x <= rows_.front()) return {0, 0, 0};
  for (size_t i = 1; i < rows_.size(); ++i)
    if (x <= rows_[i]) return {i - 1, i, (x - rows_[i - 1]) / double(rows_[i] - rows_[i - 1])};
  return {rows_.size() - 1, rows_.size() - 1, 0};
}

double PassTime::point(size_t i) const {
  return seconds_[i] * std::exp(log_fix_[i]);
}

double PassTime::calibrated_time(uint32_t rows) const {
  const double x = std::max<uint32_t>(rows, 1);
  if (rows_.empty()) return x;
  const size_t n = rows_.size();
  // Each count at least as dear as the one before it (a correction may say otherwise).
  auto at = [&](size_t i) {
    double t = point(0);
    for (size_t j = 1; j <= i; ++j) t = std::max(t, point(j));
    return t;
  };
  if (x <= rows_.front()) return at(0) * x / rows_.front();
  if (x <= rows_[n - 1]) {
    const Bracket b = bracket(rows);
    return at(b.lo) + b.share * (at(b.hi) - at(b.lo));
  }
  // Past the last count: its last segment's slope (per row at least the average so far).
  const double last = at(n - 1);
  const double slope = n >= 2 ? std::max((last - at(n - 2)) / double(rows_[n - 1] - rows_[n - 2]),
                                         last / rows_[n - 1] * 0.5)
                              : last / rows_[0];
  return last + slope * (x - rows_[n - 1]);
}

void PassTime::observe(uint32_t rows, double seconds) {
  if (rows == 0 || !(seconds > 0) || !std::isfinite(seconds) || !calibrated()) return;
  const double ratio = seconds / calibrated_time(rows);
  // The first observation sets the scale; later ones move it.
  const double keep = observed_ == 0 ? 0.0 : 1.0 - decay_;
  scale_ = keep * scale_ + (1 - keep) * ratio;
  ++observed_;
  // What the scale leaves unexplained corrects the shape around these rows (header).
  const double residual = std::log(seconds / time(rows));
  const Bracket b = bracket(rows);
  log_fix_[b.lo] += decay_ * (1 - b.share) * residual;
  if (b.hi != b.lo) log_fix_[b.hi] += decay_ * b.share * residual;
}

double PassTime::time(uint32_t rows) const {
  return scale_ * calibrated_time(rows);
}

void DraftTime::observe(uint32_t steps, uint32_t rows, double seconds) {
  if (steps == 0 || !(seconds >= 0) || !std::isfinite(seconds)) return;
  // A proposer's first call warms it up (allocations, a draft model's first touches of its
  // cache): not a sample of what its calls cost.
  if (!warmed_) {
    warmed_ = true;
    return;
  }
  const double keep = n_ == 0 ? 0.0 : 1.0 - decay_, s = steps, r = rows;
  sss_ = keep * sss_ + s * s;
  ssr_ = keep * ssr_ + s * r;
  srr_ = keep * srr_ + r * r;
  sst_ = keep * sst_ + s * seconds;
  srt_ = keep * srt_ + r * seconds;
  ++n_;
}

double DraftTime::time(uint32_t steps, uint32_t rows) const {
  // Free until a few calls are timed: drafting gets tried, and measured.
  if (n_ < kSettled || steps == 0) return 0;
  // Least squares for t = a·steps + b·rows, both at least 0; when the calls seen do not tell
  // the two apart (rows always a multiple of steps), all of it per row... or per step.
  const double det = sss_ * srr_ - ssr_ * ssr_;
  double a = 0, b = 0;
  if (det > 1e-9 * sss_ * srr_) {
    a = (sst_ * srr_ - srt_ * ssr_) / det;
    b = (srt_ * sss_ - sst_ * ssr_) / det;
  }
  if (a < 0 || b < 0 || det <= 1e-9 * sss_ * srr_) {
    // One term only: the one that fits better.
    const double a_only = sss_ > 0 ? sst_ / sss_ : 0, b_only = srr_ > 0 ? srt_ / srr_ : 0;
    const double err_a = sst_ * a_only, err_b = srt_ * b_only;  // explained sums of squares
    a = err_a >= err_b ? a_only : 0;
    b = err_a >= err_b ? 0 : b_only;
  }
  return std::max(0.0, a * steps + b * rows);
}

}  // namespace specd
