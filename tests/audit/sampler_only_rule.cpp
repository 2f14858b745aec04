// Test-only plugin: exact-match's sampler without outcomes, so `specd audit` can only test
// it by Monte-Carlo. With SPECD_SAMPLER_BIAS_PERCENT = b > 0 the emitted token is replaced,
// with probability b / 100, by the target's most likely token: a small bias that a default-size
// test may not see, and that the audit must never call verified.
#include "exact-match/exact_match_rule.hpp"
#include "specd/cpp/plugin.hpp"

#ifndef SPECD_SAMPLER_BIAS_PERCENT
#define SPECD_SAMPLER_BIAS_PERCENT 0
#endif

namespace {

class SamplerOnly {
 public:
  SamplerOnly(specd::sdk::Host host, const specd::sdk::Params& params)
      : host_(host), rule_(host, params) {}
  void accept(const specd_draft_tree& tree, const specd_target_dists& target, specd_rng* rng,
              specd_accept_result& result) {
    rule_.accept(tree, target, rng, result);
    if (SPECD_SAMPLER_BIAS_PERCENT > 0 && host_.uniform(rng) < SPECD_SAMPLER_BIAS_PERCENT / 100.0) {
      const uint32_t row =
          result.path_length ? static_cast<uint32_t>(result.path[result.path_length - 1]) : 0;
      result.next_token = static_cast<specd_token>(specd::accept::argmax_lowest(
          {target.p + static_cast<size_t>(row) * target.vocab_size, target.vocab_size}));
    }
  }

 private:
  specd::sdk::Host host_;
  specd::accept::ExactMatchRule rule_;
};

}  // namespace

#if SPECD_SAMPLER_BIAS_PERCENT > 0
#define SPECD_SAMPLER_ID "org.specd.test.biased-sampler"
#define SPECD_SAMPLER_NAME "test-biased-sampler"
#else
#define SPECD_SAMPLER_ID "org.specd.test.sampler-only"
#define SPECD_SAMPLER_NAME "test-sampler-only"
#endif

SPECD_ACCEPTANCE_PLUGIN(SamplerOnly, SPECD_SAMPLER_ID, SPECD_SAMPLER_NAME, "0.0.1",
                        "exact-match's sampler, no outcomes", SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC))
