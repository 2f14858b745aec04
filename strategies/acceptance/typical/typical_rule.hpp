// Typical acceptance (Medusa, Cai et al. 2024): a draft token x after node r is accepted when
//   p[r](x) > min(epsilon, delta * exp(-H(p[r]))),   H = entropy in nats,
// with Medusa's defaults epsilon = 0.09 (posterior_threshold) and delta = 0.3
// (posterior_alpha = sqrt(epsilon)). The accepted path is the longest path whose nodes all
// pass (Medusa keeps the candidate with the longest accepted prefix; ties: smallest node ids).
// The next token is drawn from p at the end of that path (at temperature 0 p is one-hot, so
// this is the argmax).
// Lossy: it accepts tokens p finds merely plausible, so the output is not distributed as p.
#pragma once

#include <cmath>

#include "common/deepest_path.hpp"
#include "common/rule_base.hpp"

namespace specd::accept {

class TypicalRule : public RuleBase<TypicalRule> {
 public:
  TypicalRule(sdk::Host host, const sdk::Params& params) : RuleBase(host) {
    params.require_known({"epsilon", "delta"});
    epsilon_ = params.get_float("epsilon", 0.09);
    delta_ = params.get_float("delta", 0.3);
    if (!(epsilon_ > 0 && epsilon_ <= 1)) throw params.invalid("epsilon", "must be in (0, 1]");
    if (!(delta_ >= 0) || !std::isfinite(delta_)) throw params.invalid("delta", "must be >= 0");
  }

  template <class C>
  void decide(C& c, const Round& round) const {
    accept_path_then_sample(c, round, path(round));
  }

 private:
  std::vector<uint32_t> path(const Round& round) const {
    std::vector<double> threshold(round.n_nodes() + 1, -1.0);  // per parent row, lazily
    return deepest_passing_path(round, [&](uint32_t r, uint32_t node) {
      if (threshold[r] < 0) {
        double h = 0;
        for (double v : round.p(r))
          if (v > 0) h -= v * std::log(v);
        threshold[r] = std::min(epsilon_, delta_ * std::exp(-h));
      }
      return round.p(r)[round.token(node)] > threshold[r];
    });
  }

  double epsilon_ = 0.09;
  double delta_ = 0.3;
};

}  // namespace specd::accept
