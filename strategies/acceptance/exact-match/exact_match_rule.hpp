// Exact-match acceptance ("sample and compare"): at node r draw y from p[r]; if a child of r
// carries token y, accept it and continue there; otherwise stop and emit y. A leaf emits
// y ~ p[leaf] as the bonus token.
// Exact for ANY draft, deterministic or sampled, chain or tree, with or without q: every
// emitted token is drawn from the target's p given the accepted prefix, and the draft only
// decides how many of those draws one target pass can confirm.
#pragma once

#include "common/rule_base.hpp"

namespace specd::accept {

class ExactMatchRule : public RuleBase<ExactMatchRule> {
 public:
  using RuleBase::RuleBase;

  template <class C>
  static void decide(C& c, const Round& round, uint32_t r = 0) {
    c.choose(round.p(r), [&](uint32_t y) {
      const uint32_t child = round.child_with_token(r, static_cast<specd_token>(y));
      if (child == 0) return c.finish(y);
      descend(c, child, [&] { decide(c, round, child); });
    });
  }
};

}  // namespace specd::accept
