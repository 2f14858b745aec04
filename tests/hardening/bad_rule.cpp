// A test acceptance rule that returns results outside its contract on purpose
// (tests/hardening). `mode` picks the defect; "good" accepts nothing and emits token 0.
//
// Modes: good, node-not-in-tree, node-zero, not-a-chain, too-long, overrun,
// next-token-too-large, next-token-negative, fail, fail-after (fails every call after the
// first `after` of the process, so that a server's self-test at load passes and a later
// request fails).
#include <specd/cpp/plugin.hpp>

#include <atomic>
#include <string>

namespace {

class BadRule {
 public:
  BadRule(specd::sdk::Host, const specd::sdk::Params& params) {
    params.require_known({"mode", "after"});
    mode_ = params.get_string("mode", "good");
    after_ = params.get_int("after", 0);
  }

  void accept(const specd_draft_tree& tree, const specd_target_dists&, specd_rng*,
              specd_accept_result& result) {
    result.path_length = 0;
    result.next_token = 0;
    if (mode_ == "node-not-in-tree") {
      result.path[0] = static_cast<int32_t>(tree.n_nodes) + 1;
      result.path_length = 1;
    } else if (mode_ == "node-zero") {
      result.path[0] = 0;  // the root is never part of the accepted path
      result.path_length = 1;
    } else if (mode_ == "not-a-chain" && result.path_capacity >= 2) {
      result.path[0] = 2;  // node 2's parent is node 1, not the root
      result.path[1] = 1;
      result.path_length = 2;
    } else if (mode_ == "too-long") {
      // Stays inside the buffer but claims more nodes than the tree is deep.
      result.path_length = result.path_capacity + 1;
    } else if (mode_ == "overrun") {
      // Writes one node past path_capacity (the host keeps a spare slot to notice).
      for (uint32_t i = 0; i <= result.path_capacity; ++i) result.path[i] = 1;
      result.path_length = result.path_capacity + 1;
    } else if (mode_ == "next-token-too-large") {
      result.next_token = static_cast<specd_token>(tree.vocab_size);
    } else if (mode_ == "next-token-negative") {
      result.next_token = -1;
    } else if (mode_ == "fail" || (mode_ == "fail-after" && ++calls_ > after_)) {
      throw specd::sdk::invalid_argument("bad-rule was asked to fail");
    }
  }

 private:
  std::string mode_;
  int64_t after_ = 0;
  static inline std::atomic<int64_t> calls_{0};  // the process's, across instances
};

}  // namespace

SPECD_ACCEPTANCE_PLUGIN(BadRule, "org.specd.test.bad-rule", "bad-rule", "0.0.1",
                        "test rule: returns results outside the contract on purpose",
                        SPECD_LABEL_EXACT,
                        SPECD_ACCEPT_SUPPORTS_TREES |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID) |
                            SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_WITHOUT_REPLACEMENT))
