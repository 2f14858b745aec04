// Test-only plugin: declares both the deterministic and the i.i.d. sibling scheme and is
// exact for the first only. Without q (deterministic drafts) it accepts the draft token x
// with probability p(x) and otherwise draws from p without x: exact for any fixed draft.
// With q (i.i.d. drafts) it accepts with min(1, p/q) but, on rejection, draws from p
// instead of the residual norm(max(0, p - q)): the classic bug, biased towards q's tokens.
// An audit that checks only one declared scheme calls it lossless.
#include "common/rule_base.hpp"
#include "specd/cpp/plugin.hpp"

namespace {

using specd::accept::Round;

class TwoSchemeRule : public specd::accept::RuleBase<TwoSchemeRule> {
 public:
  using RuleBase::RuleBase;

  template <class C>
  static void decide(C& c, const Round& round, uint32_t r = 0) {
    const auto& kids = round.children(r);
    if (kids.empty()) return c.choose(round.p(r), [&](uint32_t y) { c.finish(y); });
    const uint32_t node = kids.front();
    const specd_token x = round.token(node);
    const double a = round.has_q()
                         ? specd::accept::acceptance_probability(round.p(r)[x], round.q(r)[x])
                         : round.p(r)[x];
    c.bernoulli(a, [&](bool accepted) {
      if (accepted) {
        specd::accept::descend(c, node, [&] { decide(c, round, node); });
        return;
      }
      std::vector<double> rest(round.p(r).begin(), round.p(r).end());
      if (!round.has_q()) rest[x] = 0;  // exact: p without the rejected token
      c.choose(rest, [&](uint32_t y) { c.finish(y); });
    });
  }
};

}  // namespace

SPECD_ACCEPTANCE_PLUGIN(TwoSchemeRule, "org.specd.test.two-scheme", "test-two-scheme", "0.0.1",
                        "exact for deterministic drafts, wrong for i.i.d. ones", SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID))
