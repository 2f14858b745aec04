// Relaxed top-k acceptance (TensorRT-LLM's "relaxed acceptance" for DeepSeek MTP): a draft
// token x after node r is accepted when
//   rank of x in p[r] < top_k   (rank 0 = most probable; ties: lowest id first), and
//   log p[r](x) >= log max p[r] - delta   (delta in log-probability space), and p[r](x) > 0.
// Defaults top_k = 10, delta = 0.6 (TensorRT-LLM's recommended relaxed_topk / relaxed_delta).
// Note: the delta is a log-probability margin (p(x) >= max p * exp(-delta)), not a
// probability margin. The accepted path is the longest passing path (ties: smallest node ids);
// the next token is drawn from p at its end.
// Lossy: any near-top token is accepted, so the output is not distributed as p.
#pragma once

#include <cmath>

#include "common/deepest_path.hpp"
#include "common/rule_base.hpp"

namespace specd::accept {

class RelaxedTopkRule : public RuleBase<RelaxedTopkRule> {
 public:
  RelaxedTopkRule(sdk::Host host, const sdk::Params& params) : RuleBase(host) {
    params.require_known({"top_k", "delta"});
    top_k_ = params.get_int("top_k", 10);
    delta_ = params.get_float("delta", 0.6);
    if (top_k_ < 1) throw params.invalid("top_k", "must be >= 1");
    if (!(delta_ >= 0) || !std::isfinite(delta_)) throw params.invalid("delta", "must be >= 0");
  }

  template <class C>
  void decide(C& c, const Round& round) const {
    accept_path_then_sample(c, round, path(round));
  }

 private:
  bool passes(std::span<const double> p, specd_token x) const {
    const double px = p[x];
    if (!(px > 0)) return false;
    const double max_p = p[argmax_lowest(p)];
    if (!(std::log(px) >= std::log(max_p) - delta_)) return false;
    int64_t rank = 0;  // tokens ranked before x: larger p, or equal p and smaller id
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i] > px || (p[i] == px && i < static_cast<size_t>(x))) ++rank;
    return rank < top_k_;
  }

  std::vector<uint32_t> path(const Round& round) const {
    return deepest_passing_path(
        round, [&](uint32_t r, uint32_t node) { return passes(round.p(r), round.token(node)); });
  }

  int64_t top_k_ = 10;
  double delta_ = 0.6;
};

}  // namespace specd::accept
