// Greedy acceptance: at node r let y = argmax p[r] (lowest id on ties); if a child of r
// carries y, accept it and continue; otherwise stop and emit y. The bonus token of a leaf is
// argmax p[leaf].
// Greedy-exact: at temperature 0 the rows are one-hot and the output is token for token the
// target's greedy decoding. At temperature > 0 it is deterministic and so not the target's
// distribution; `specd audit` reports it as not applicable there.
#pragma once

#include "common/rule_base.hpp"

namespace specd::accept {

class GreedyRule : public RuleBase<GreedyRule> {
 public:
  using RuleBase::RuleBase;

  template <class C>
  static void decide(C& c, const Round& round) {
    uint32_t r = 0;
    size_t depth = 0;
    for (;;) {
      const uint32_t y = argmax_lowest(round.p(r));
      const uint32_t child = round.child_with_token(r, static_cast<specd_token>(y));
      if (child == 0) {
        c.finish(y);
        break;
      }
      c.enter(child);
      ++depth;
      r = child;
    }
    for (; depth > 0; --depth) c.leave();
  }
};

}  // namespace specd::accept
