// Greedy acceptance: at node r let y = argmax p[r] (lowest id on ties); if a child of r
// carries y, accept it and continue; otherwise stop and emit y. The bonus token of a leaf is
// argmax p[leaf].
// Greedy-exact: at temperature 0 the rows are one-hot and the output is token for token the
// target's greedy decoding. At temperature > 0 it is deterministic and so not the target's
// distribution; `specd audit` reports it as not applicable there.
#pragma once

#include "common/round.hpp"

namespace specd::accept {

class GreedyRule {
 public:
  GreedyRule(sdk::Host host, const sdk::Params& params) : host_(host) { params.require_known({}); }

  void accept(const specd_draft_tree& tree, const specd_target_dists& target, specd_rng* rng,
              specd_accept_result& result) {
    Round round(tree, target);
    Sampler s(host_, rng, result);
    walk(s, round);
  }

  void outcomes(const specd_draft_tree& tree, const specd_target_dists& target,
                specd_outcome_fn emit, void* user) {
    Round round(tree, target);
    Enumerator e(emit, user);
    walk(e, round);
  }

 private:
  template <class C>
  static void walk(C& c, const Round& round) {
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

  sdk::Host host_;
};

}  // namespace specd::accept
