// Shared pieces of the acceptance tests: the installed acceptance plugins (loaded through the
// registry, so third-party rules in the plugin folder get the same checks) and random
// distribution rows with the edge cases mixed in.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "acceptance/acceptance_rule.hpp"
#include "audit/draft_enumeration.hpp"
#include "plugin/registry.hpp"
#include "test_paths.hpp"

namespace specd::test {

inline PluginRegistry& registry() {
  static PluginRegistry r({SPECD_BINARY_DIR + "/bin/plugins"});
  return r;
}

inline std::vector<const LoadedPlugin*> acceptance_plugins() {
  return registry().of_kind(SPECD_KIND_ACCEPTANCE);
}

inline AcceptanceRule make_rule(const std::string& name) {
  return AcceptanceRule(registry().require(name, SPECD_KIND_ACCEPTANCE), nullptr);
}

// Random rows keyed by context (the path from the root), created on first use and then
// fixed, so p and q are consistent functions of the path as a real model's would be.
// Kinds mixed in: spread out, with zeros, one-hot, and q equal to p.
class RandomModel {
 public:
  RandomModel(uint32_t vocab, uint64_t seed, bool one_hot_p = false)
      : vocab_(vocab), rng_(seed), one_hot_p_(one_hot_p) {}

  std::vector<double> p(std::span<const specd_token> ctx) { return row(p_rows_, ctx, true); }
  std::vector<double> q(std::span<const specd_token> ctx) { return row(q_rows_, ctx, false); }

  RowFn p_fn() {
    return [this](std::span<const specd_token> c) { return p(c); };
  }
  RowFn q_fn() {
    return [this](std::span<const specd_token> c) { return q(c); };
  }

 private:
  using Rows = std::map<std::vector<specd_token>, std::vector<double>>;

  std::vector<double> row(Rows& rows, std::span<const specd_token> ctx, bool is_p) {
    std::vector<specd_token> key(ctx.begin(), ctx.end());
    auto it = rows.find(key);
    if (it != rows.end()) return it->second;
    std::vector<double> r = is_p ? fresh_p() : fresh_q(key);
    rows.emplace(key, r);
    return r;
  }

  std::vector<double> fresh_p() {
    if (one_hot_p_) return one_hot();
    switch (pick(5)) {
      case 0:
        return one_hot();
      case 1:
        return with_zeros();
      default:
        return spread();
    }
  }

  std::vector<double> fresh_q(const std::vector<specd_token>& key) {
    switch (pick(6)) {
      case 0:
        return one_hot();
      case 1:
        return with_zeros();
      case 2:
        return p(key);  // p == q at this node
      default:
        return spread();
    }
  }

  uint32_t pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }

  std::vector<double> normalised(std::vector<double> r) {
    double s = 0;
    for (double v : r) s += v;
    for (double& v : r) v /= s;
    return r;
  }
  std::vector<double> spread() {
    std::vector<double> r(vocab_);
    std::exponential_distribution<double> e(1.0);
    for (double& v : r) v = e(rng_);
    return normalised(r);
  }
  std::vector<double> with_zeros() {
    std::vector<double> r = spread();
    const uint32_t keep = pick(vocab_);
    for (uint32_t i = 0; i < vocab_; ++i)
      if (i != keep && pick(2) == 0) r[i] = 0;
    return normalised(r);
  }
  std::vector<double> one_hot() {
    std::vector<double> r(vocab_, 0.0);
    r[pick(vocab_)] = 1.0;
    return r;
  }

  uint32_t vocab_;
  std::mt19937_64 rng_;
  bool one_hot_p_;
  Rows p_rows_, q_rows_;
};

// The scheme a rule is exercised with when several are possible: drafts sampled from q when
// the rule needs q, else deterministic.
inline std::vector<specd_sibling_scheme> schemes_of(const AcceptanceRule& rule) {
  std::vector<specd_sibling_scheme> out;
  for (specd_sibling_scheme s :
       {SPECD_SIBLINGS_DETERMINISTIC, SPECD_SIBLINGS_IID, SPECD_SIBLINGS_WITHOUT_REPLACEMENT})
    if (rule.supports_scheme(s)) out.push_back(s);
  return out;
}

}  // namespace specd::test
