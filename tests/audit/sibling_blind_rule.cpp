// Test-only plugin: rejection sampling over draft trees that forgets to update its target
// between siblings. Each child is tried against the node's own p (min(1, p/q)) instead of
// the residual left by the siblings rejected before it, and when every child is rejected
// the token comes from norm(max(0, p - q)). With one child per node (a chain) that is the
// standard rule and exact; with several children it over-accepts: a rule wrong only where
// a node has several children, which an audit of chains alone calls lossless.
#include "common/rule_base.hpp"
#include "specd/cpp/plugin.hpp"

namespace {

using specd::accept::Round;

class SiblingBlindRule : public specd::accept::RuleBase<SiblingBlindRule> {
 public:
  using RuleBase::RuleBase;

  template <class C>
  static void decide(C& c, const Round& round, uint32_t r = 0) {
    if (round.children(r).empty()) return c.choose(round.p(r), [&](uint32_t y) { c.finish(y); });
    try_sibling(c, round, r, 0);
  }

 private:
  template <class C>
  static void try_sibling(C& c, const Round& round, uint32_t r, size_t i) {
    const auto& kids = round.children(r);
    const auto p = round.p(r);
    const auto q = round.q(r);
    if (i == kids.size()) {
      const std::vector<double> rest = specd::accept::residual(p, q);
      return c.choose(rest, [&](uint32_t y) { c.finish(y); });
    }
    const uint32_t node = kids[i];
    const specd_token x = round.token(node);
    c.bernoulli(specd::accept::acceptance_probability(p[x], q[x]), [&](bool accepted) {
      if (!accepted) return try_sibling(c, round, r, i + 1);  // the bug: p, not the residual
      specd::accept::descend(c, node, [&] { decide(c, round, node); });
    });
  }
};

}  // namespace

SPECD_ACCEPTANCE_PLUGIN(SiblingBlindRule, "org.specd.test.sibling-blind", "test-sibling-blind",
                        "0.0.1", "exact on chains, wrong where a node has several children",
                        SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_NEEDS_Q | SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID))
