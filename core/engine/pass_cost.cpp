#include "engine/pass_cost.hpp"

#include <algorithm>
#include <cmath>

namespace specd {

void PassCost::observe(uint32_t rows, double seconds) {
  if (rows == 0 || !(seconds > 0) || !std::isfinite(seconds)) return;
  const double keep = n_ == 0 ? 0.0 : 1.0 - decay_, x = rows, y = seconds;
  w_ = keep * w_ + 1;
  wx_ = keep * wx_ + x;
  wxx_ = keep * wxx_ + x * x;
  wy_ = keep * wy_ + y;
  wxy_ = keep * wxy_ + x * y;
  wyy_ = keep * wyy_ + y * y;
  ++n_;
}

void PassCost::fit(double& a, double& b) const {
  a = 0;
  b = 0;
  if (n_ == 0) return;
  const double mx = wx_ / w_, my = wy_ / w_;
  const double var = wxx_ / w_ - mx * mx, cov = wxy_ / w_ - mx * my;
  // One row count seen (or nearly): a pass costs in proportion to its rows.
  if (var <= 1e-9 * std::max(1.0, mx * mx)) {
    b = my / mx;
    return;
  }
  // The slope (at least 0: more rows never cost less) plus its standard error (see the
  // header): pessimistic where the rows seen barely vary or the times are noisy.
  const double var_y = std::max(0.0, wyy_ / w_ - my * my);
  const double residual = std::max(0.0, var_y - cov * cov / var);
  b = std::max(0.0, cov / var) + std::sqrt(residual / (w_ * var));
  a = my - b * mx;
  if (a < 0) {  // a line through the origin instead: no negative fixed cost
    a = 0;
    b = wxy_ / wxx_;
  }
}

double PassCost::time(uint32_t rows) const {
  const double x = std::max<uint32_t>(rows, 1);
  if (n_ == 0) return x;  // nothing measured: one unit per row
  double a, b;
  fit(a, b);
  const double t = a + b * x;
  return t > 0 ? t : 1e-12;
}

double PassCost::fixed_s() const {
  double a, b;
  fit(a, b);
  return a;
}

double PassCost::per_row_s() const {
  double a, b;
  fit(a, b);
  return b;
}

}  // namespace specd
