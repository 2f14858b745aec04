// Drafts across vocabularies (specd/cpp/vocabulary_bridge.hpp and the audit's two-vocabulary
// table): the bridge's pieces on their own, then the exactness argument measured: the exact
// rule stays exact with a draft of another vocabulary, by text and by intersection, at any
// temperature, and a rule that is not exact is still caught there.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "audit/audit_engine.hpp"
#include "audit/translated_drafts.hpp"
#include "audited_rules.hpp"
#include "plugin/registry.hpp"
#include "specd/cpp/vocabulary_bridge.hpp"
#include "test_paths.hpp"

using namespace specd;

namespace {

const MarkovModel& two_vocabularies_table() {
  static const std::vector<MarkovModel> tables = builtin_markov_models();
  for (const MarkovModel& t : tables)
    if (t.two_vocabularies()) return t;
  FAIL("no built-in two-vocabulary table");
  return tables.front();
}

// The rule `name` of the plugins in `dir`.
struct Rules : test::AuditedRules {
  Rules(const std::string& dir, const std::string& name) : AuditedRules(dir, {name}) {}
};

}  // namespace

TEST_CASE("vocabulary bridge: intersection, masks, q carried across, the draft's tokens") {
  const std::vector<std::string> target = {"a", "b", "ab", "", "c"};
  const std::vector<std::string> draft = {"b", "ab", "ba", "a", "", "a"};
  const std::vector<specd_token> map = sdk::intersect_vocabularies(draft, target);
  CHECK(map == std::vector<specd_token>{1, 2, -1, 0, -1, 0});  // "" never maps

  std::vector<float> logits = {0, 1, 5, 0, 3, 0};
  sdk::mask_outside_intersection(logits, map);
  std::vector<double> q(logits.size());
  REQUIRE(sdk::softmax_at(logits, 1.0, q));
  CHECK(q[2] == 0);  // "ba" is not a target token
  CHECK(q[4] == 0);
  CHECK(std::accumulate(q.begin(), q.end(), 0.0) == doctest::Approx(1.0));
  REQUIRE(sdk::softmax_at(logits, 0.0, q));  // temperature 0: the argmax inside the intersection
  CHECK(q[1] == 1.0);
  // Two draft ids spelling "a": the target's q of "a" is their sum.
  const std::vector<double> qd = {0.1, 0.2, 0, 0.3, 0, 0.4};
  std::vector<double> qt(target.size());
  sdk::map_to_target(qd, map, qt);
  CHECK(qt[0] == doctest::Approx(0.7));
  CHECK(qt[1] == doctest::Approx(0.1));
  CHECK(qt[2] == doctest::Approx(0.2));
  std::vector<float> none = {-std::numeric_limits<float>::infinity()};
  std::vector<double> one(1);
  CHECK_FALSE(sdk::softmax_at(none, 1.0, one));

  // The draft's tokens for a growing text: re-tokenized from kMargin tokens before the change.
  const std::vector<std::string> pieces = {"a", "b", "ab", "abab"};
  size_t encoded = 0;  // bytes handed to the tokenizer, all calls
  sdk::DraftTokens tokens(
      [&](std::string_view s, bool) {
        encoded += s.size();
        return longest_match_tokens(s, pieces);
      },
      pieces);
  CHECK(tokens.update("abab") == std::vector<specd_token>{3});
  CHECK(tokens.update("ababab") == std::vector<specd_token>{3, 2});
  CHECK(tokens.update("abababb") == std::vector<specd_token>{3, 2, 1});
  encoded = 0;
  CHECK(tokens.update("abababbaaaa") == std::vector<specd_token>{3, 2, 1, 0, 0, 0, 0});
  CHECK(encoded < 11);  // only the end was read again
  // A text that changes earlier (another request on the same sequence) is re-read from there.
  CHECK(tokens.update("b") == std::vector<specd_token>{1});
}

TEST_CASE("text drafts are the draft's argmax chain re-tokenized; intersection drafts sum to 1") {
  const MarkovModel& m = two_vocabularies_table();
  const RowFn p_row = [&](std::span<const specd_token>) {
    return std::vector<double>(m.vocab, 1.0 / m.vocab);
  };
  const AllowedFn all = [&](std::span<const specd_token>) {
    return std::vector<bool>(m.vocab, true);
  };
  size_t drafts = 0;
  double total = 0;
  enumerate_translated_drafts(m, Translation::kText, 1.0, 3, {0, 1}, p_row, all,
                              [&](const OwnedDraft& d, double w) {
                                ++drafts;
                                total += w;
                                CHECK(d.n_nodes() <= 3);
                                for (uint32_t i = 0; i < d.n_nodes(); ++i)
                                  CHECK(d.q[i * m.vocab + static_cast<size_t>(d.tokens[i])] == 1.0);
                              });
  CHECK(drafts == 1);
  CHECK(total == 1.0);
  drafts = 0;
  total = 0;
  enumerate_translated_drafts(m, Translation::kIntersection, 1.0, 2, {2}, p_row, all,
                              [&](const OwnedDraft& d, double w) {
                                ++drafts;
                                total += w;
                                CHECK(d.n_nodes() == 2);
                              });
  CHECK(drafts > 4);
  CHECK(total == doctest::Approx(1.0));
}

TEST_CASE("the exact rule stays exact across vocabularies; a mislabelled rule is caught there") {
  const std::vector<MarkovModel> tables = {two_vocabularies_table()};
  AuditOptions options;
  options.samples = 4000;
  options.k = 3;
  options.constraints = {audit_constraint("none")};
  Rules rejection(SPECD_BINARY_DIR + "/bin/plugins", "rejection");
  REQUIRE(rejection.views.size() == 1);
  for (double temperature : {1.0, 0.6, 0.0}) {
    CAPTURE(temperature);
    options.sampling.temperature = temperature;
    const AuditReport report = run_audit(rejection.views, tables, options);
    REQUIRE(report.rules.size() == 1);
    const RuleAudit& r = report.rules[0];
    CHECK(r.verdict == "lossless");
    REQUIRE(r.cases.size() == 2);  // by text and by intersection
    for (const AuditCase& c : r.cases) {
      CAPTURE(c.scheme);
      CHECK(c.exact_tv < 1e-12);
      CHECK(c.verdict == "lossless");
      CHECK_FALSE(c.sampler_disagrees);
    }
  }
  // Under a grammar-like mask on target and draft: an intersection draw is masked first, a
  // text chain cut before its first refused token (draft_model_proposer.cpp does the same).
  options.sampling.temperature = 1.0;
  options.constraints = {audit_constraint("mask")};
  {
    const AuditReport report = run_audit(rejection.views, tables, options);
    REQUIRE(report.rules[0].cases.size() == 2);
    for (const AuditCase& c : report.rules[0].cases) {
      CAPTURE(c.scheme);
      CHECK(c.constraint == "mask");
      CHECK(c.exact_tv < 1e-12);
      CHECK(c.verdict == "lossless");
    }
  }
  options.constraints = {audit_constraint("none")};
  // A rule wrong on drafts with q (after a rejection it draws from p, not from the residual)
  // is caught on the translated drafts too, by text (a one-hot q) and by intersection.
  Rules wrong(SPECD_AUDIT_FAILING_PLUGIN_DIR, "test-two-scheme");
  REQUIRE(wrong.views.size() == 1);
  const AuditReport report = run_audit(wrong.views, tables, options);
  CHECK(report.rules[0].verdict == "label-wrong");
}
