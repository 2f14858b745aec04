// Shared building blocks of the bundled acceptance rules (header-only, SDK headers only, so
// every rule plugin stays free of core code).
//
// Each rule writes its walk ONCE as a template over a "chooser". Every random decision of the
// walk is a call `c.choose(weights, cont)` or `c.bernoulli(a, cont)`:
//   - Sampler (used by `accept`) draws one branch with the host RNG and follows it;
//   - Enumerator (used by `outcomes`) follows every branch with positive weight, carrying the
//     product of branch probabilities, and reports each finished walk.
// So `accept` and `outcomes` cannot disagree about the algorithm, only about the RNG
// plumbing, which the Monte-Carlo tests check.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "specd/acceptance.h"
#include "specd/cpp/distribution.hpp"
#include "specd/cpp/host.hpp"
#include "specd/draft.h"

namespace specd::accept {

// Read-only view of one round: the draft tree, p and q rows, and each node's children.
class Round {
 public:
  Round(const specd_draft_tree& tree, const specd_target_dists& target)
      : tree_(tree), target_(target), vocab_(target.vocab_size), children_(tree.n_nodes + 1) {
    if (target.n_rows != tree.n_nodes + 1)
      throw sdk::invalid_argument("target has " + std::to_string(target.n_rows) +
                                  " rows for a tree of " + std::to_string(tree.n_nodes) +
                                  " nodes (need nodes + 1)");
    if (tree.n_nodes > 0 && tree.vocab_size != vocab_)
      throw sdk::invalid_argument("draft vocabulary " + std::to_string(tree.vocab_size) +
                                  " differs from the target's " + std::to_string(vocab_));
    if (vocab_ == 0 || target.p == nullptr) throw sdk::invalid_argument("empty target rows");
    for (uint32_t i = 1; i <= tree.n_nodes; ++i) {
      const int32_t parent = tree.parents[i - 1];
      const specd_token t = tree.tokens[i - 1];
      if (parent < 0 || static_cast<uint32_t>(parent) >= i)
        throw sdk::invalid_argument("node " + std::to_string(i) + " has parent " +
                                    std::to_string(parent) + " (must be in [0, node))");
      if (t < 0 || static_cast<uint32_t>(t) >= vocab_)
        throw sdk::invalid_argument("node " + std::to_string(i) + " has token " +
                                    std::to_string(t) + " outside the vocabulary");
      children_[parent].push_back(i);
    }
  }

  uint32_t vocab() const { return vocab_; }
  uint32_t n_nodes() const { return tree_.n_nodes; }
  specd_sibling_scheme scheme() const { return tree_.scheme; }
  bool has_q() const { return tree_.q != nullptr; }
  specd_token token(uint32_t node) const { return tree_.tokens[node - 1]; }
  const std::vector<uint32_t>& children(uint32_t node) const { return children_[node]; }
  std::span<const double> p(uint32_t row) const {
    return {target_.p + static_cast<size_t>(row) * vocab_, vocab_};
  }
  std::span<const double> q(uint32_t row) const {
    return {tree_.q + static_cast<size_t>(row) * vocab_, vocab_};
  }
  bool is_chain() const {
    for (const auto& c : children_)
      if (c.size() > 1) return false;
    return true;
  }
  // The first child of `node` whose token is `token`, or 0.
  uint32_t child_with_token(uint32_t node, specd_token token) const {
    for (uint32_t c : children_[node])
      if (tree_.tokens[c - 1] == token) return c;
    return 0;
  }

 private:
  const specd_draft_tree& tree_;
  const specd_target_dists& target_;
  uint32_t vocab_;
  std::vector<std::vector<uint32_t>> children_;
};

// Index of the largest entry, lowest index on ties.
inline uint32_t argmax_lowest(std::span<const double> row) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < row.size(); ++i)
    if (row[i] > row[best]) best = i;
  return best;
}

// min(1, p/q) for a proposed token. A token with q = 0 cannot have been drawn from q; the
// host refuses such drafts, and if one reaches a rule anyway it is rejected (probability 0),
// which keeps the walk well defined without dividing by zero.
inline double acceptance_probability(double p, double q) {
  if (!(q > 0)) return 0.0;
  if (p >= q) return 1.0;
  return p > 0 ? p / q : 0.0;
}

// norm(max(0, p - q)). When the residual has no mass (p == q up to rounding) the rejection
// that would sample it has probability 0; `p` is returned unchanged so that no NaN arises.
inline std::vector<double> residual(std::span<const double> p, std::span<const double> q) {
  std::vector<double> r(p.size());
  double total = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    r[i] = p[i] > q[i] ? p[i] - q[i] : 0.0;
    total += r[i];
  }
  if (!(total > 0)) return std::vector<double>(p.begin(), p.end());
  for (double& v : r) v /= total;
  return r;
}

// The tree nodes a walk has accepted so far, in order (the Sampler's and the Enumerator's).
class AcceptedPath {
 public:
  void enter(uint32_t node) { path_.push_back(static_cast<int32_t>(node)); }
  void leave() { path_.pop_back(); }

 protected:
  std::vector<int32_t> path_;
};

// The total mass of a row to choose from. A row with negative, NaN or infinite entries or no
// mass is the plugin's internal error; `use` names what the row was for.
inline double row_mass(std::span<const double> weights, const char* use) {
  const sdk::RowCheck c = sdk::check_row(weights);
  if (!c.ok())
    throw sdk::PluginError(SPECD_STATUS_INTERNAL,
                           std::string("a distribution to ") + use + ": " + c.problem);
  return c.total;
}

// Draws branches with the host RNG; writes the result of `accept`.
class Sampler : public AcceptedPath {
 public:
  Sampler(sdk::Host host, specd_rng* rng, specd_accept_result& result)
      : host_(host), rng_(rng), result_(result) {}

  // Picks index i with probability weights[i] / sum(weights): the SDK's one draw (inverse
  // CDF, one uniform), after row_mass's checks.
  template <class F>
  void choose(std::span<const double> weights, F&& cont) {
    cont(sdk::draw_checked(weights, row_mass(weights, "sample"), host_.uniform(rng_)));
  }

  // Calls cont(true) with probability a, else cont(false); draws nothing when a is 0 or 1.
  template <class F>
  void bernoulli(double a, F&& cont) {
    if (a >= 1.0) return cont(true);
    if (!(a > 0.0)) return cont(false);
    cont(host_.uniform(rng_) < a);
  }

  void finish(uint32_t next_token) {
    if (path_.size() > result_.path_capacity || (!path_.empty() && result_.path == nullptr))
      throw sdk::invalid_argument("accept result buffer holds " +
                                  std::to_string(result_.path_capacity) + " nodes, the path has " +
                                  std::to_string(path_.size()));
    for (size_t i = 0; i < path_.size(); ++i) result_.path[i] = path_[i];
    result_.path_length = static_cast<uint32_t>(path_.size());
    result_.next_token = static_cast<specd_token>(next_token);
  }

 private:
  sdk::Host host_;
  specd_rng* rng_;
  specd_accept_result& result_;
};

// Follows every branch; reports each outcome with the product of its branch probabilities.
class Enumerator : public AcceptedPath {
 public:
  Enumerator(specd_outcome_fn emit, void* user) : emit_(emit), user_(user) {}

  // Every index the Sampler's choose could pick, with its probability (the same checks).
  template <class F>
  void choose(std::span<const double> weights, F&& cont) {
    const double total = row_mass(weights, "enumerate");
    const double saved = weight_;
    for (uint32_t i = 0; i < weights.size(); ++i) {
      if (!(weights[i] > 0)) continue;
      weight_ = saved * (weights[i] / total);
      cont(i);
    }
    weight_ = saved;
  }

  template <class F>
  void bernoulli(double a, F&& cont) {
    if (a >= 1.0) return cont(true);
    if (!(a > 0.0)) return cont(false);
    const double saved = weight_;
    weight_ = saved * a;
    cont(true);
    weight_ = saved * (1.0 - a);
    cont(false);
    weight_ = saved;
  }

  void finish(uint32_t next_token) {
    emit_(user_, path_.data(), static_cast<uint32_t>(path_.size()),
          static_cast<specd_token>(next_token), weight_);
  }

 private:
  specd_outcome_fn emit_;
  void* user_;
  double weight_ = 1.0;
};

// Accepts `node` for the duration of `then` (the walk below it), on a Sampler or Enumerator.
template <class C, class F>
void descend(C& c, uint32_t node, F&& then) {
  c.enter(node);
  then();
  c.leave();
}

// Ends a walk at `node`: the next token is drawn from p[node] (the correction when the walk
// stopped early, the bonus token after a fully accepted path).

template <class C>
void finish_from_p(C& c, const Round& round, uint32_t node) {
  c.choose(round.p(node), [&](uint32_t y) { c.finish(y); });
}

inline void require_q(const Round& round, const char* rule) {
  if (!round.has_q())
    throw sdk::invalid_argument(std::string("rule '") + rule +
                                "' needs the draft distributions q, and the tree has none");
}

inline const char* scheme_name(specd_sibling_scheme s) {
  const char* name = specd_sibling_scheme_name(s);
  return name ? name : "unknown";
}

}  // namespace specd::accept
