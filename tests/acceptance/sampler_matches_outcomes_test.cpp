// Monte-Carlo check that each rule's sampler (`accept`, drawing from the host RNG) follows
// the exact outcome probabilities it reports (`outcomes`).
//
// Significance: each (rule, case) pair is one G-test at alpha = 1e-6. With the six bundled
// rules and five cases each (30 tests) the chance of any false failure is below 3e-5 per
// run; the seeds are fixed, so a run is reproducible either way.
#include <doctest/doctest.h>

#include <map>

#include "audit/distribution_tests.hpp"
#include "rule_fixture.hpp"

namespace {

constexpr double kAlpha = 1e-6;
constexpr int kSamples = 20000;

using Key = std::pair<std::vector<int32_t>, specd_token>;

}  // namespace

TEST_CASE("accept samples the distribution that outcomes reports") {
  int tests = 0;
  for (const specd::LoadedPlugin* plugin : specd::test::acceptance_plugins()) {
    specd::AcceptanceRule rule(*plugin, nullptr);
    if (!rule.has_outcomes()) continue;
    const auto schemes = specd::test::schemes_of(rule);
    for (uint64_t c = 0; c < 5; ++c) {
      specd::DraftSpec spec;
      spec.vocab = 3 + static_cast<uint32_t>(c);
      spec.branching = rule.supports_trees() && c % 2 == 1 ? std::vector<uint32_t>{2, 2}
                                                           : std::vector<uint32_t>{1, 1, 1};
      spec.scheme = schemes[c % schemes.size()];
      spec.with_q = true;
      specd::test::RandomModel model(spec.vocab, 1000 + c);
      specd::Rng rng(77 + c);
      const specd::OwnedDraft draft = specd::sample_draft(spec, model.q_fn(), model.p_fn(), rng);
      const specd_draft_tree tree = draft.tree();
      const specd_target_dists target = draft.target();

      std::map<Key, size_t> index;
      std::vector<double> probs;
      for (const auto& o : rule.outcomes(tree, target)) {
        auto [it, fresh] = index.try_emplace(Key{o.path, o.next_token}, probs.size());
        if (fresh) probs.push_back(0.0);
        probs[it->second] += o.probability;
      }
      std::vector<uint64_t> counts(probs.size() + 1, 0);  // last: outcomes never reported
      probs.push_back(0.0);
      for (int s = 0; s < kSamples; ++s) {
        const specd::AcceptResult r = rule.accept(tree, target, rng);
        auto it = index.find(Key{r.path, r.next_token});
        ++counts[it == index.end() ? counts.size() - 1 : it->second];
      }
      const specd::GTestResult g = specd::g_test(probs, counts);
      INFO("rule ", rule.name(), " case ", c, " G=", g.g, " dof=", g.dof, " p=", g.p_value);
      CHECK(counts.back() == 0);
      CHECK(g.p_value >= kAlpha);
      ++tests;
    }
  }
  CHECK(tests >= 30);
}
