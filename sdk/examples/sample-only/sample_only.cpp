// An acceptance rule that accepts no draft token and samples the next token from the
// target's distribution at the root. Exact by construction — it is plain sampling — so it
// is a useful control arm in an A/B comparison: it pays for verification but gains nothing.
#include <specd/cpp/plugin.hpp>

#include <vector>

namespace {

class SampleOnly {
 public:
  SampleOnly(specd::sdk::Host host, const specd::sdk::Params& params) : host_(host) {
    params.require_known({});
  }

  void accept(const specd_draft_tree& tree, const specd_target_dists& target, specd_rng* rng,
              specd_accept_result& result) {
    (void)tree;
    double u = host_.uniform(rng);
    const double* p = target.p;  // row 0: the root
    specd_token chosen = -1;
    double cumulative = 0;
    for (uint32_t x = 0; x < target.vocab_size; ++x) {
      if (p[x] <= 0) continue;
      cumulative += p[x];
      chosen = static_cast<specd_token>(x);
      if (u < cumulative) break;  // falls back to the last token with p > 0 on rounding
    }
    if (chosen < 0) throw specd::sdk::invalid_argument("target distribution has no mass");
    result.path_length = 0;
    result.next_token = chosen;
  }

  void outcomes(const specd_draft_tree& tree, const specd_target_dists& target,
                specd_outcome_fn emit, void* user) {
    (void)tree;
    for (uint32_t x = 0; x < target.vocab_size; ++x)
      if (target.p[x] > 0) emit(user, nullptr, 0, static_cast<specd_token>(x), target.p[x]);
  }

 private:
  specd::sdk::Host host_;
};

}  // namespace

SPECD_ACCEPTANCE_PLUGIN(SampleOnly, "com.example.accept.sample-only", "sample-only", "1.0.0",
                        "accepts nothing; samples the next token from the target (control arm)",
                        SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_WITHOUT_REPLACEMENT))
