// `specd audit` measures what the bundled rules claim, and catches rules that claim too much:
// one whose exact outcomes are lossy, and one whose sampler disagrees with its outcomes.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "audit/audit_case.hpp"
#include "audit/audit_engine.hpp"
#include "audit/audit_report.hpp"
#include "audited_rules.hpp"
#include "audited_tables.hpp"
#include "common/error.hpp"
#include "plugin/registry.hpp"
#include "test_paths.hpp"

namespace {

using specd::test::audited_rule;
using Rules = specd::test::AuditedRules;

specd::AuditOptions quick() {
  specd::AuditOptions o;
  o.samples = 4000;
  o.tree = {2, 1};  // several children at the root; a quarter of the default's drafts
  return o;
}

// For cases whose verdicts come from the exact TVs: under the sanitizers (ten times slower)
// the samplers' paths run with fewer draws; the plain build keeps the statistics' power.
specd::AuditOptions quick_exact() {
  specd::AuditOptions o = quick();
  if (SPECD_SANITIZED) o.samples = 800;
  return o;
}

}  // namespace

TEST_CASE("the bundled rules' labels hold on the built-in tables") {
  Rules rules(SPECD_BINARY_DIR + "/bin/plugins");
  REQUIRE(rules.views.size() >= 6);
  const auto tables = audited_tables();
  REQUIRE(tables.size() >= 3);
  const specd::AuditReport report = specd::run_audit(rules.views, tables, quick_exact());
  CHECK_FALSE(report.any_label_wrong());
  for (const char* exact : {"rejection", "tree-rejection", "exact-match"}) {
    const auto& r = audited_rule(report, exact);
    INFO(exact);
    CHECK(r.verdict == "lossless");
    CHECK(r.exact_tv < 1e-12);
  }
  // Every bundled rule's sampler agrees with its own outcomes, lossy ones included.
  for (const auto& r : report.rules)
    for (const specd::AuditCase& c : r.cases) {
      INFO(r.name << " " << c.table << " " << c.constraint << " " << c.scheme);
      CHECK_FALSE(c.sampler_disagrees);
    }
  const auto& greedy = audited_rule(report, "greedy");
  CHECK(greedy.verdict == "lossless");
  // T=1 (not applicable) and T=0, for each of its three sibling schemes and constraints; on a
  // two-vocabulary table, i.i.d. chains by text and by intersection, under each constraint.
  size_t two = 0;
  for (const auto& t : tables) two += t.two_vocabularies() ? 1 : 0;
  CHECK(greedy.cases.size() ==
        (2 * 3 * (tables.size() - two) + 2 * 2 * two) * specd::default_audit_constraints().size());
  for (const char* lossy : {"typical", "relaxed-topk"}) {
    const auto& r = audited_rule(report, lossy);
    CHECK(r.verdict == "lossy");
    CHECK(r.exact_tv > 0.1);
  }
  const std::string json = specd::format_audit_json(report, quick(), tables);
  CHECK(json.find("\"verdict\": \"lossless\"") != std::string::npos);
  CHECK(json.find("\"mc_tv_ci\": [") != std::string::npos);
  CHECK(json.find("\"label_wrong\": false") != std::string::npos);
}

TEST_CASE("tree drafts, temperature 0 and the truncating transforms keep exact rules exact") {
  Rules rules(SPECD_BINARY_DIR + "/bin/plugins");
  auto tables = specd::builtin_markov_models();
  tables.resize(SPECD_SANITIZED ? 1 : 3);  // one vocabulary each
  auto o = quick_exact();
  o.tree = {2, 2};
  o.sampling.top_k = 3;
  o.sampling.top_p = 0.9;
  o.sampling.temperature = 0.7;
  auto report = specd::run_audit(rules.views, tables, o);
  CHECK_FALSE(report.any_label_wrong());
  o.tree.clear();
  o.sampling = {};
  o.sampling.temperature = 0;
  report = specd::run_audit(rules.views, tables, o);
  CHECK_FALSE(report.any_label_wrong());
  // Three schemes, each constraint.
  CHECK(audited_rule(report, "greedy").cases.size() == 3 * tables.size() * o.constraints.size());
}

TEST_CASE("audit constraints mask and penalise the target per path, and exact rules hold") {
  const auto tables = specd::builtin_markov_models();
  const specd::MarkovModel* uniform = nullptr;
  for (const auto& t : tables)
    if (t.name == "near-uniform") uniform = &t;
  REQUIRE(uniform != nullptr);
  specd::CaseSetup setup;
  setup.model = uniform;
  setup.tokens = 3;
  const std::vector<double> plain = specd::target_distribution(setup);
  setup.constraint = specd::audit_constraint("mask");
  const std::vector<double> masked = specd::target_distribution(setup);
  setup.constraint = specd::audit_constraint("penalties");
  const std::vector<double> penalised = specd::target_distribution(setup);
  const uint32_t V = uniform->vocab;
  double moved = 0;
  size_t reachable = 0;
  for (size_t index = 0; index < masked.size(); ++index) {
    moved += std::abs(penalised[index] - plain[index]) / 2;
    if (masked[index] == 0) continue;
    ++reachable;
    std::vector<uint32_t> seq(setup.tokens + 1);  // t0 most significant
    for (size_t i = seq.size(), rest = index; i-- > 0; rest /= V) seq[i] = rest % V;
    std::vector<int> seen(V, 0);
    for (size_t i = 1; i < seq.size(); ++i) {
      INFO("sequence index " << index << ", position " << i);
      // Every row of this table keeps a token the mask allows, so no row drops its mask.
      CHECK((seq[i] + (i - 1) + seq[i - 1]) % 3 != 0);
      CHECK(seen[seq[i]] < 2);
      ++seen[seq[i]];
    }
  }
  CHECK(reachable > 0);
  CHECK(reachable < masked.size() / 2);
  CHECK(moved > 0.01);  // the penalties do change the distribution

  Rules rules(SPECD_BINARY_DIR + "/bin/plugins");
  auto o = quick_exact();
  o.samples = SPECD_SANITIZED ? 200 : 2000;
  o.constraints.clear();
  for (const std::string& name : specd::audit_constraint_names())
    o.constraints.push_back(specd::audit_constraint(name));
  for (double temperature : {1.0, 0.0}) {
    o.sampling.temperature = temperature;
    const auto report = specd::run_audit(rules.views, {*uniform, tables.front()}, o);
    CHECK_FALSE(report.any_label_wrong());
    for (const char* exact : {"rejection", "tree-rejection", "exact-match", "greedy"}) {
      INFO(exact << " at T=" << temperature);
      CHECK(audited_rule(report, exact).verdict == "lossless");
    }
  }
  CHECK_THROWS_WITH_AS(specd::audit_constraint("grammar"),
                       doctest::Contains("unknown audit constraint 'grammar'"), specd::UsageError);
}

TEST_CASE("a lossy rule labelled exact is caught by the exact TV") {
  Rules rules(SPECD_AUDIT_TEST_PLUGIN_DIR);
  const specd::AuditReport report =
      specd::run_audit(rules.views, specd::builtin_markov_models(), quick());
  const auto& r = audited_rule(report, "test-mislabelled");
  CHECK(r.verdict == "label-wrong");
  CHECK(r.exact_tv > 1e-3);
  CHECK(report.any_label_wrong());
  CHECK(specd::format_audit_text(report, quick(), specd::builtin_markov_models(), false)
            .find("LABEL WRONG") != std::string::npos);
}

TEST_CASE("a sampler that disagrees with its outcomes is caught by the p-value") {
  Rules rules(SPECD_AUDIT_TEST_PLUGIN_DIR);
  const specd::AuditReport report =
      specd::run_audit(rules.views, specd::builtin_markov_models(), quick());
  const auto& r = audited_rule(report, "test-lying-sampler");
  CHECK(r.exact_tv < 1e-12);  // its outcomes are exact-match's, which are exact
  CHECK(r.verdict == "label-wrong");
  CHECK(r.p_value < r.alpha_per_case);
  // Named as what it is: the rule contradicts itself.
  CHECK(r.summary.find("its sampler disagrees with its own outcomes") != std::string::npos);
}
