// Recursive rejection sampling over a draft tree (SpecInfer, Miao et al. 2024; the
// without-replacement variant follows Recursive Speculative Decoding, Jeon et al. 2024).
//
// At node r with children c_1..c_m (index order) the rule keeps a target R (initially
// p[r]) and the distribution Q_i that c_i was drawn from. For i = 1..m: accept c_i with
// probability min(1, R(x_i) / Q_i(x_i)) and continue the walk at c_i; on rejection set
// R <- norm(max(0, R - Q_i)). When every child is rejected, emit a token drawn from R.
// A leaf emits its bonus token from p[leaf].
//
// Why it is exact (the sibling scheme matters):
//   Each sibling step is one rejection-sampling step of target R from proposal Q_i: it emits
//   x_i with probability min(R, Q_i)(x_i) and otherwise continues with the residual target.
//   By induction from the last sibling (which falls back to sampling R directly), the token
//   emitted at r is distributed as R = p[r], PROVIDED that, conditionally on everything
//   before it, x_i is really distributed as Q_i.
//   - scheme iid: x_i ~ q[r] independently, so Q_i = q[r] for every i (SpecInfer).
//   - scheme without-replacement: x_i ~ q[r] renormalised without x_1..x_{i-1}, so Q_i is
//     that renormalised row and the residual update must subtract Q_i, not q[r]
//     (using q[r] there would be biased).
//   - scheme deterministic: the children are not drawn from q, there is no Q_i, and the
//     rule refuses the tree.
//   The subtree below an accepted child is drawn given that child's path only, so the
//   argument repeats at every depth.
#pragma once

#include "common/rule_base.hpp"

namespace specd::accept {

class TreeRejectionRule : public RuleBase<TreeRejectionRule> {
 public:
  using RuleBase::RuleBase;

  void check(const Round& round) const {
    if (round.n_nodes() > 0) {
      require_q(round, "tree-rejection");
      if (round.scheme() != SPECD_SIBLINGS_IID &&
          round.scheme() != SPECD_SIBLINGS_WITHOUT_REPLACEMENT)
        throw sdk::PluginError(
            SPECD_STATUS_UNSUPPORTED,
            std::string("rule 'tree-rejection' is exact only for siblings drawn from q (scheme "
                        "iid or without-replacement), got scheme ") +
                scheme_name(round.scheme()));
    }
  }

  template <class C>
  static void decide(C& c, const Round& round, uint32_t r = 0) {
    if (round.children(r).empty()) return finish_from_p(c, round, r);
    const auto p = round.p(r);
    const auto q = round.q(r);
    try_sibling(c, round, r, 0, std::vector<double>(p.begin(), p.end()),
                std::vector<double>(q.begin(), q.end()));
  }

 private:
  // Sibling i of node r against target `target_row`, proposal `proposal` (= Q_i).
  template <class C>
  static void try_sibling(C& c, const Round& round, uint32_t r, size_t i,
                          const std::vector<double>& target_row,
                          const std::vector<double>& proposal) {
    const auto& kids = round.children(r);
    if (i == kids.size()) {
      c.choose(target_row, [&](uint32_t y) { c.finish(y); });
      return;
    }
    const uint32_t node = kids[i];
    const specd_token x = round.token(node);
    const double a = acceptance_probability(target_row[x], proposal[x]);
    c.bernoulli(a, [&](bool accepted) {
      if (accepted) {
        descend(c, node, [&] { decide(c, round, node); });
        return;
      }
      const std::vector<double> next_target = residual(target_row, proposal);
      if (round.scheme() != SPECD_SIBLINGS_WITHOUT_REPLACEMENT || i + 1 == kids.size())
        return try_sibling(c, round, r, i + 1, next_target, proposal);
      std::vector<double> next_proposal = proposal;
      next_proposal[x] = 0.0;
      double mass = 0;
      for (double v : next_proposal) mass += v;
      if (!(mass > 0))
        throw sdk::invalid_argument("node " + std::to_string(r) +
                                    " has more children than q has "
                                    "tokens to draw without replacement");
      for (double& v : next_proposal) v /= mass;
      try_sibling(c, round, r, i + 1, next_target, next_proposal);
    });
  }
};

}  // namespace specd::accept
