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
  ExactMatchRule(sdk::Host host, const sdk::Params& params) : RuleBase(host) {
    params.require_known({});
  }

  template <class C>
  void decide(C& c, const Round& round) const {
    walk(c, round, 0);
  }

 private:
  template <class C>
  static void walk(C& c, const Round& round, uint32_t r) {
    c.choose(round.p(r), [&](uint32_t y) {
      const uint32_t child = round.child_with_token(r, static_cast<specd_token>(y));
      if (child == 0) return c.finish(y);
      c.enter(child);
      walk(c, round, child);
      c.leave();
    });
  }
};

}  // namespace specd::accept
