// Speculative sampling with rejection (Leviathan et al. 2023; Chen et al. 2023), for chains.
//
// At node r with child c of token x drawn from q[r]: accept c with probability
// min(1, p[r](x) / q[r](x)); on rejection emit a token drawn from norm(max(0, p[r] - q[r])).
// After the last node is accepted the bonus token is drawn from p[leaf].
// Exact: for x ~ q, the emitted token at each position is distributed as p (the accepted
// mass min(p, q) plus the rejected mass sum max(0, q - p) times the residual equals p).
// When p == q the residual has no mass, but then every token is accepted with probability 1,
// so the residual is never sampled (round.hpp guards the division).
#pragma once

#include "common/rule_base.hpp"

namespace specd::accept {

class RejectionRule : public RuleBase<RejectionRule> {
 public:
  using RuleBase::RuleBase;

  void check(const Round& round) const {
    if (round.n_nodes() > 0) {
      require_q(round, "rejection");
      if (!round.is_chain())
        throw sdk::PluginError(SPECD_STATUS_UNSUPPORTED,
                               "rule 'rejection' works on chains only; use 'tree-rejection' for "
                               "trees");
      if (round.scheme() != SPECD_SIBLINGS_IID)
        throw sdk::PluginError(SPECD_STATUS_UNSUPPORTED,
                               std::string("rule 'rejection' needs a chain sampled from q "
                                           "(scheme iid), got scheme ") +
                                   scheme_name(round.scheme()));
    }
  }

  template <class C>
  static void decide(C& c, const Round& round, uint32_t r = 0) {
    const auto& kids = round.children(r);
    if (kids.empty()) return finish_from_p(c, round, r);
    const uint32_t node = kids.front();
    const specd_token x = round.token(node);
    const double a = acceptance_probability(round.p(r)[x], round.q(r)[x]);
    c.bernoulli(a, [&](bool accepted) {
      if (accepted) {
        descend(c, node, [&] { decide(c, round, node); });
      } else {
        const std::vector<double> res = residual(round.p(r), round.q(r));
        c.choose(res, [&](uint32_t y) { c.finish(y); });
      }
    });
  }
};

}  // namespace specd::accept
