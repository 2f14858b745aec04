// Test-only plugin: a rule labelled exact that cannot run. Built twice: with
// SPECD_FAIL_IN_CREATE its create fails (the rule object never exists), otherwise every
// accept and outcomes call fails. `specd audit` must report its row as an error and go on.
#include "specd/cpp/plugin.hpp"

namespace {

class FailingRule {
 public:
  FailingRule(specd::sdk::Host, const specd::sdk::Params&) {
#ifdef SPECD_FAIL_IN_CREATE
    throw specd::sdk::PluginError(SPECD_STATUS_UNAVAILABLE, "the licence server is unreachable");
#endif
  }
  void accept(const specd_draft_tree&, const specd_target_dists&, specd_rng*,
              specd_accept_result&) {
    throw specd::sdk::PluginError(SPECD_STATUS_INTERNAL, "accept is broken on purpose");
  }
  void outcomes(const specd_draft_tree&, const specd_target_dists&, specd_outcome_fn, void*) {
    throw specd::sdk::PluginError(SPECD_STATUS_INTERNAL, "outcomes is broken on purpose");
  }
};

}  // namespace

#ifdef SPECD_FAIL_IN_CREATE
#define SPECD_FAILING_ID "org.specd.test.failing-create"
#define SPECD_FAILING_NAME "test-failing-create"
#else
#define SPECD_FAILING_ID "org.specd.test.failing-accept"
#define SPECD_FAILING_NAME "test-failing-accept"
#endif

SPECD_ACCEPTANCE_PLUGIN(FailingRule, SPECD_FAILING_ID, SPECD_FAILING_NAME, "0.0.1",
                        "a rule that cannot run", SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC))
