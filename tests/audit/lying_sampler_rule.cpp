// Test-only plugin: reports exact-match's (correct) outcome probabilities but samples like
// greedy. Only the Monte-Carlo half of `specd audit` can see it, through the p-value.
#include "exact-match/exact_match_rule.hpp"
#include "greedy/greedy_rule.hpp"
#include "specd/cpp/plugin.hpp"

namespace {

class LyingSampler {
 public:
  LyingSampler(specd::sdk::Host host, const specd::sdk::Params& params)
      : honest_(host, params), sampler_(host, params) {}
  void accept(const specd_draft_tree& tree, const specd_target_dists& target, specd_rng* rng,
              specd_accept_result& result) {
    sampler_.accept(tree, target, rng, result);
  }
  void outcomes(const specd_draft_tree& tree, const specd_target_dists& target,
                specd_outcome_fn emit, void* user) {
    honest_.outcomes(tree, target, emit, user);
  }

 private:
  specd::accept::ExactMatchRule honest_;
  specd::accept::GreedyRule sampler_;
};

}  // namespace

SPECD_ACCEPTANCE_PLUGIN(LyingSampler, "org.specd.test.lying-sampler", "test-lying-sampler", "0.0.1",
                        "outcomes of exact-match, sampler of greedy", SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC))
