// What accept() and outcomes() share in every rule of this folder. A rule states its
// decision once, as decide(c, round) over a chooser c: a Sampler (accept: draws with the
// host's RNG and records the path) or an Enumerator (outcomes: every outcome with its exact
// probability). One procedure for both is what lets the tests compare a rule's sampler
// with its own exact outcomes.
//
//   class MyRule : public RuleBase<MyRule> {
//    public:
//     MyRule(sdk::Host host, const sdk::Params& params) : RuleBase(host) { ... }
//     // or, for a rule without parameters: using RuleBase::RuleBase;
//     void check(const Round& round) const;  // optional: preconditions, throw to refuse
//     template <class C> void decide(C& c, const Round& round) const;
//   };
// A rule that walks the tree node by node may instead define
//     template <class C> static void decide(C& c, const Round& round, uint32_t r = 0);
// deciding at node r and recursing below it (descend() in round.hpp).
#pragma once

#include "common/round.hpp"

namespace specd::accept {

template <class Rule>
class RuleBase {
 public:
  explicit RuleBase(sdk::Host host) : host_(host) {}
  // For rules without parameters (`using RuleBase::RuleBase;`): any parameter is refused.
  RuleBase(sdk::Host host, const sdk::Params& params) : host_(host) { params.require_known({}); }

  void accept(const specd_draft_tree& tree, const specd_target_dists& target, specd_rng* rng,
              specd_accept_result& result) const {
    const Round round = checked(tree, target);
    Sampler s(host_, rng, result);
    rule().decide(s, round);
  }

  void outcomes(const specd_draft_tree& tree, const specd_target_dists& target,
                specd_outcome_fn emit, void* user) const {
    const Round round = checked(tree, target);
    Enumerator e(emit, user);
    rule().decide(e, round);
  }

  void check(const Round&) const {}  // no preconditions unless the rule has some

 private:
  const Rule& rule() const { return static_cast<const Rule&>(*this); }
  Round checked(const specd_draft_tree& tree, const specd_target_dists& target) const {
    Round round(tree, target);
    rule().check(round);
    return round;
  }

  sdk::Host host_;
};

}  // namespace specd::accept
