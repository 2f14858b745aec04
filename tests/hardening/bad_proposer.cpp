// A test proposer that breaks the draft-tree contract on purpose (tests/hardening). The
// `mode` parameter picks the defect; "good" drafts a valid deterministic chain so that a
// misbehaving acceptance rule can be exercised on real trees.
//
// Modes: good, parent-out-of-range, parent-negative, token-too-large, token-negative,
// q-not-normalised, q-nan, too-many-nodes, duplicate-siblings, unknown-scheme,
// sampled-without-q, fail (propose reports SPECD_STATUS_INVALID_ARGUMENT), undeclared-q
// (says it filled q; built as "bad-proposer-noq", which does not declare
// SPECD_PROPOSER_PROVIDES_Q and so is given no q buffer), report-setup (create fails with
// a message listing the setup it was given, to compare run's and check-config's).
#include <specd/cpp/plugin.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace {

class BadProposer {
 public:
  BadProposer(specd::sdk::Host, const specd::sdk::Params& params, const char*,
              const specd_proposer_context& context, const specd_transform&)
      : vocab_(context.vocab_size) {
    params.require_known({"mode"});
    mode_ = params.get_string("mode", "good");
    if (mode_ == "report-setup") {
      uint32_t empty = 0;
      for (uint32_t i = 0; i < context.vocab_size; ++i) empty += context.token_texts[i][0] == 0;
      throw specd::sdk::invalid_argument(
          "setup: vocab_size " + std::to_string(context.vocab_size) + ", empty texts " +
          std::to_string(empty) + ", hidden_dim " + std::to_string(context.hidden_dim) +
          ", max_nodes " + std::to_string(context.max_nodes) + ", draft_length " +
          std::to_string(context.draft_length) + ", target " + context.target_path);
    }
  }

  void begin(std::span<const specd_token>, const float*) {}

  void propose(std::span<const specd_token>, specd_rng*, specd_draft_output& out) {
    out.scheme = SPECD_SIBLINGS_DETERMINISTIC;
    out.has_q = 0;
    out.n_nodes = 0;
    if (mode_ == "fail") throw specd::sdk::invalid_argument("bad-proposer was asked to fail");
    if (out.capacity < 2) return;
    // Default shape: a chain of two nodes under the root.
    out.n_nodes = 2;
    out.tokens[0] = 3;
    out.tokens[1] = 4;
    out.parents[0] = 0;
    out.parents[1] = 1;
    if (mode_ == "good") return;
    if (mode_ == "parent-out-of-range") {
      out.parents[1] = 7;  // neither earlier than node 2 nor a node at all
    } else if (mode_ == "parent-negative") {
      out.parents[0] = -1;
    } else if (mode_ == "token-too-large") {
      out.tokens[1] = static_cast<specd_token>(vocab_);
    } else if (mode_ == "token-negative") {
      out.tokens[0] = -5;
    } else if (mode_ == "q-not-normalised" || mode_ == "q-nan") {
      // A sampled chain whose q rows are wrong: rows 0 and 1 have children.
      out.scheme = SPECD_SIBLINGS_IID;
      out.has_q = 1;
      for (uint32_t r = 0; r < 2; ++r) fill_uniform(out.q + static_cast<size_t>(r) * vocab_);
      if (mode_ == "q-not-normalised")
        out.q[static_cast<size_t>(vocab_) + 4] += 0.5;  // row 1 sums to 1.5
      else
        out.q[5] = std::numeric_limits<double>::quiet_NaN();
    } else if (mode_ == "too-many-nodes") {
      out.n_nodes = out.capacity + 1;  // claims more than the room it was given (writes none)
    } else if (mode_ == "duplicate-siblings") {
      out.scheme = SPECD_SIBLINGS_WITHOUT_REPLACEMENT;
      out.has_q = 1;
      fill_uniform(out.q);
      out.parents[1] = 0;
      out.tokens[1] = out.tokens[0];
    } else if (mode_ == "unknown-scheme") {
      out.scheme = 99;
    } else if (mode_ == "undeclared-q") {
      out.has_q = 1;  // writes nothing: out.q is NULL for a proposer without PROVIDES_Q
    } else if (mode_ == "sampled-without-q") {
      out.scheme = SPECD_SIBLINGS_IID;  // says "drawn from q" but gives none
    }
  }

  void commit(std::span<const specd_token>, specd_token, const float*) {}

 private:
  void fill_uniform(double* row) const {
    for (uint32_t i = 0; i < vocab_; ++i) row[i] = 1.0 / vocab_;
  }

  uint32_t vocab_;
  std::string mode_;
};

}  // namespace

#ifdef SPECD_BAD_PROPOSER_WITHOUT_Q
SPECD_PROPOSER_PLUGIN(BadProposer, "org.specd.test.bad-proposer-noq", "bad-proposer-noq", "0.0.1",
                      "test proposer: breaks the draft-tree contract, declares no q",
                      SPECD_PROPOSER_TREES, "greedy")
#else
SPECD_PROPOSER_PLUGIN(BadProposer, "org.specd.test.bad-proposer", "bad-proposer", "0.0.1",
                      "test proposer: breaks the draft-tree contract on purpose",
                      SPECD_PROPOSER_TREES | SPECD_PROPOSER_PROVIDES_Q, "greedy")
#endif
