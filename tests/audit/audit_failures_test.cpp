// What `specd audit` must not get wrong about rules that break its assumptions:
//   - a rule declaring two sibling schemes is audited under each (one wrong scheme is a
//     wrong label);
//   - a rule without outcomes is only tested: the verdict says which TV the test would have
//     seen, never "verified", and --detect-tv raises the samples until it sees enough;
//   - a rule that cannot run is an error row, the others are still audited, and "could not
//     run" exits 3 where "label wrong" exits 1.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "audit/audit_engine.hpp"
#include "audit/audit_report.hpp"
#include "audit/config_audit.hpp"
#include "audit/distribution_tests.hpp"
#include "audited_rules.hpp"
#include "audited_tables.hpp"
#include "cmd_audit.hpp"
#include "config/config.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"

namespace {

const std::string kFailing = SPECD_AUDIT_FAILING_PLUGIN_DIR;
const std::string kPlugins = SPECD_BINARY_DIR + "/bin/plugins";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The named rules of the failing-plugins folder (and the bundled ones), created.
struct Rules : specd::test::AuditedRules {
  explicit Rules(const std::vector<std::string>& names) : AuditedRules(kFailing, names) {}
};

using specd::test::audited_rule;

struct CommandResult {
  int status = -1;
  std::string out;
};

// Runs `specd audit ARGS` in this process with its standard output captured.
CommandResult audit_command(std::vector<std::string> args) {
  args.insert(args.begin(), "audit");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::fflush(stdout);
  std::FILE* capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  const int saved = dup(STDOUT_FILENO);
  dup2(fileno(capture), STDOUT_FILENO);
  CommandResult r;
  r.status = run_audit_command(static_cast<int>(argv.size()), argv.data());
  std::fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  std::rewind(capture);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, capture)) > 0) r.out.append(buf, n);
  std::fclose(capture);
  return r;
}

specd::AuditOptions quick() {
  specd::AuditOptions o;
  o.samples = 4000;
  o.tree = {2, 1};  // several children at the root; a quarter of the default's drafts
  return o;
}

}  // namespace

TEST_CASE("the default audit runs trees: a rule wrong only with several children is caught") {
  Rules rules({"test-sibling-blind"});
  const auto tables = specd::builtin_markov_models();
  specd::AuditOptions o = quick();
  o.constraints = {specd::audit_constraint("none")};
  REQUIRE(specd::AuditOptions{}.tree == std::vector<uint32_t>{2, 2});  // the default shape
  o.tree = {2, 2};
  const specd::AuditReport on_trees = specd::run_audit(rules.views, tables, o);
  const specd::RuleAudit& wrong = audited_rule(on_trees, "test-sibling-blind");
  CHECK(wrong.verdict == "label-wrong");
  CHECK(wrong.exact_tv > 1e-3);
  // On chains alone it is exact, and the report says trees were not audited.
  o.tree.clear();
  const specd::AuditReport on_chains = specd::run_audit(rules.views, tables, o);
  const specd::RuleAudit& chains = audited_rule(on_chains, "test-sibling-blind");
  CHECK(chains.verdict == "lossless");
  CHECK(contains(chains.summary, "on chains only"));
  // The command's default catches it too.
  CHECK(audit_command({"--plugin-path", kFailing, "--rule", "test-sibling-blind", "--samples",
                       "500", "--constraints", "none"})
            .status == 1);
}

TEST_CASE("a plugin path that contributes no rule fails the audit instead of passing on none") {
  // A real rule under a name the registry skips: warned about, and the audit exits 3.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "specd-audit-misnamed";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kFailing + "/specd-accept-two-scheme.so", dir / "two-scheme.so");
  CHECK(audit_command({"--plugin-path", dir.string(), "--samples", "100"}).status == 3);
  std::filesystem::rename(dir / "two-scheme.so", dir / "specd-accept-two-scheme.so");
  CHECK(audit_command({"--plugin-path", dir.string(), "--rule", "test-two-scheme", "--samples",
                       "500", "--constraints", "none"})
            .status == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a rule is audited under every sibling scheme it declares") {
  Rules rules({"test-two-scheme"});
  const auto tables = audited_tables();
  const specd::AuditReport report = specd::run_audit(rules.views, tables, quick());
  const specd::RuleAudit& r = audited_rule(report, "test-two-scheme");
  CHECK(r.verdict == "label-wrong");
  CHECK(contains(r.summary, "iid drafts"));
  size_t deterministic = 0, iid = 0;
  for (const specd::AuditCase& c : r.cases) {
    INFO(c.table << " " << c.scheme);
    if (c.scheme == "deterministic") {
      ++deterministic;
      CHECK(c.verdict == "lossless");
    } else if (c.scheme == "iid") {
      ++iid;
    }
  }
  // Each table under each constraint (a two-vocabulary table's drafts are named by how they
  // cross: i.i.d. chains, by text and by intersection).
  size_t across = 0, two = 0;
  for (const specd::AuditCase& c : r.cases) across += contains(c.scheme, "across") ? 1 : 0;
  for (const auto& t : tables) two += t.two_vocabularies() ? 1 : 0;
  CHECK(deterministic == (tables.size() - two) * quick().constraints.size());
  CHECK(iid == (tables.size() - two) * quick().constraints.size());
  CHECK(across == 2 * two * quick().constraints.size());
  // The command says so too, with the label-wrong status.
  CHECK(audit_command({"--plugin-path", kFailing, "--rule", "test-two-scheme", "--samples", "500"})
            .status == 1);
}

TEST_CASE("a rule that fails to run is an error row; the others are still audited") {
  Rules rules({"test-failing-accept", "test-two-scheme", "test-sampler-only"});
  const auto tables = audited_tables();
  const auto report = specd::run_audit(rules.views, tables, quick());
  const specd::RuleAudit& failing = audited_rule(report, "test-failing-accept");
  CHECK(failing.verdict == "error");
  CHECK(contains(failing.summary, "could not run"));
  CHECK(contains(failing.summary, "broken on purpose"));
  CHECK(report.any_error());
  CHECK(audited_rule(report, "test-two-scheme").verdict == "label-wrong");
  CHECK(audited_rule(report, "test-sampler-only").verdict == "not-rejected");
  const std::string json = specd::format_audit_json(report, quick(), tables);
  CHECK(contains(json, "\"verdict\": \"error\""));
  CHECK(contains(json, "\"error\": true"));
}

TEST_CASE("exit statuses: label wrong 1, could not run 3, both: 1") {
  // The statuses do not depend on the constraints or the tree's shape: one constraint and the
  // smallest tree with siblings keep the four audits short.
  const std::vector<std::string> base = {"--plugin-path", kFailing, "--plugin-path", kPlugins,
                                         "--samples",     "500",    "--constraints", "none",
                                         "--tree",        "2,1"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return audit_command(a);
  };
  {
    const CommandResult r = with({"--rule", "test-failing-accept", "--rule", "exact-match"});
    CHECK(r.status == 3);
    CHECK(contains(r.out, "ERROR: could not run"));
    CHECK(contains(r.out, "lossless (verified)"));  // exact-match still audited
  }
  {
    // A rule whose create fails never exists; its row says why.
    const CommandResult r = with({"--rule", "test-failing-create", "--rule", "exact-match"});
    CHECK(r.status == 3);
    CHECK(contains(r.out, "the licence server is unreachable"));
    CHECK(contains(r.out, "lossless (verified)"));
  }
  CHECK(with({"--rule", "test-failing-accept", "--rule", "test-two-scheme"}).status == 1);
  CHECK(with({"--rule", "exact-match"}).status == 0);
}

TEST_CASE("a rule without outcomes is never called verified: the report says what was shown") {
  Rules rules({"test-sampler-only"});
  specd::AuditOptions o;  // the default 20000 samples
  const auto report = specd::run_audit(rules.views, audited_tables(), o);
  const specd::RuleAudit& r = audited_rule(report, "test-sampler-only");
  CHECK(r.verdict == "not-rejected");
  CHECK_FALSE(contains(r.summary, "lossless"));
  CHECK(contains(r.summary, "not rejected at 20000 samples"));
  CHECK(contains(r.summary, "would have been detected with 95% power"));
  CHECK(r.detectable_tv > 0);
  CHECK(r.detectable_tv < 1);
  CHECK(r.samples == 20000);
}

TEST_CASE("a rule's verdict is its own: the same numbers alone or among other rules") {
  specd::AuditOptions o;
  o.samples = SPECD_SANITIZED ? 600 : 3000;
  o.tree = {};
  o.constraints = {specd::audit_constraint("none"), specd::audit_constraint("mask")};
  const auto tables = audited_tables();
  Rules alone({"test-biased-sampler"});
  Rules among({"rejection", "test-two-scheme", "test-biased-sampler", "exact-match",
               "test-sampler-only", "greedy"});
  const auto a = specd::run_audit(alone.views, tables, o);
  const auto b = specd::run_audit(among.views, tables, o);
  REQUIRE(b.cases > 3 * a.cases);
  const specd::RuleAudit& x = audited_rule(a, "test-biased-sampler");
  const specd::RuleAudit& y = audited_rule(b, "test-biased-sampler");
  // Bonferroni over the rule's own cases, and a random stream of its own.
  CHECK(x.alpha_per_case == doctest::Approx(o.alpha / static_cast<double>(x.cases.size())));
  CHECK(y.alpha_per_case == x.alpha_per_case);
  CHECK(y.verdict == x.verdict);
  REQUIRE(y.cases.size() == x.cases.size());
  for (size_t i = 0; i < x.cases.size(); ++i) {
    CHECK(y.cases[i].p_value == x.cases[i].p_value);
    CHECK(y.cases[i].mc_tv == x.cases[i].mc_tv);
    CHECK(y.cases[i].verdict == x.cases[i].verdict);
  }
  // The report states the correction.
  CHECK(contains(specd::format_audit_text(b, o, tables, false),
                 "per rule, Bonferroni over the rule's own cases"));
  CHECK(
      contains(specd::format_audit_json(b, o, tables), "\"correction\": \"bonferroni per rule\""));
}

TEST_CASE("--detect-tv raises the samples until a small bias is caught") {
  Rules rules({"test-biased-sampler"});
  const auto tables = audited_tables();
  specd::AuditOptions o;
  o.constraints = {specd::audit_constraint("none")};  // the bias is the same under any
  const auto plain = specd::run_audit(rules.views, tables, o);
  CHECK_FALSE(contains(audited_rule(plain, "test-biased-sampler").summary, "lossless"));
  o.detect_tv = 0.02;
  const auto report = specd::run_audit(rules.views, tables, o);
  const specd::RuleAudit& r = audited_rule(report, "test-biased-sampler");
  CHECK(r.verdict == "label-wrong");
  for (const specd::AuditCase& c : r.cases) {
    CHECK(c.samples >= o.samples);
    CHECK(c.detectable_tv <= 0.02 + 1e-12);
  }
  // The command accepts the option and checks its range.
  CHECK(audit_command({"--detect-tv", "0"}).status == 2);
  CHECK(audit_command({"--detect-tv", "1.5"}).status == 2);
}

TEST_CASE("noncentral chi-square tail against the closed form for one degree of freedom") {
  // X = (Z + sqrt(lambda))^2: P(X > x) = Phi(-sqrt(x) - sqrt(l)) + Phi(-sqrt(x) + sqrt(l)).
  auto phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  for (double lambda : {0.0, 0.5, 3.0, 20.0, 200.0})
    for (double x : {0.1, 1.0, 4.0, 30.0, 250.0}) {
      const double want =
          phi(-std::sqrt(x) - std::sqrt(lambda)) + phi(-std::sqrt(x) + std::sqrt(lambda));
      CAPTURE(lambda);
      CAPTURE(x);
      CHECK(specd::noncentral_chi2_survival(x, 1.0, lambda) == doctest::Approx(want).epsilon(1e-6));
    }
}

TEST_CASE("the detectable TV falls like 1/sqrt(n) once nothing is pooled") {
  const std::vector<double> probs = {0.25, 0.25, 0.25, 0.125, 0.125};
  const specd::Detectable a = specd::detectable_tv(probs, 10000, 1e-3, 0.95);
  const specd::Detectable b = specd::detectable_tv(probs, 40000, 1e-3, 0.95);
  CHECK(a.bins == 5);
  CHECK(a.pooled == 0);
  CHECK(b.tv == doctest::Approx(a.tv / 2).epsilon(1e-6));
  // Pooled mass counts in full: differences inside the pool are invisible to the test.
  const specd::Detectable pooled = specd::detectable_tv(probs, 30, 1e-3, 0.95);
  CHECK(pooled.pooled == doctest::Approx(0.25));
  CHECK(pooled.tv >= 0.25);
  CHECK(specd::samples_to_detect(probs, a.tv, 1e-3, 0.95, 100, 1000000) <= 10000);
  CHECK(specd::samples_to_detect(probs, a.tv, 1e-3, 0.95, 100, 1000000) >= 9800);
  CHECK(specd::samples_to_detect(probs, 1e-6, 1e-3, 0.95, 100, 1000000) == 0);
}

TEST_CASE("the stated power holds: the worst alternative at the detectable TV is rejected 95%") {
  // The G-test's least favourable alternative at a given TV moves mass in proportion to p,
  // from one half of p's mass to the other (the Cauchy-Schwarz equality case).
  std::vector<double> p(20);
  double total = 0;
  for (size_t i = 0; i < p.size(); ++i) total += p[i] = 1.0 / static_cast<double>(i + 2);
  for (double& x : p) x /= total;
  const uint64_t n = 2000;
  const double alpha = 1e-3;
  const specd::Detectable d = specd::detectable_tv(p, n, alpha, 0.95);
  REQUIRE(d.pooled == 0);
  std::vector<double> q(p.size());
  double up = 0;
  std::vector<bool> raise(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    raise[i] = up < 0.5;
    if (raise[i]) up += p[i];
  }
  for (size_t i = 0; i < p.size(); ++i)
    q[i] = raise[i] ? p[i] * (1 + d.tv / up) : p[i] * (1 - d.tv / (1 - up));
  CHECK(specd::total_variation(p, q) == doctest::Approx(d.tv));
  std::mt19937_64 gen(1);
  std::discrete_distribution<size_t> draw(q.begin(), q.end());
  const int trials = 400;
  int rejected = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<uint64_t> counts(p.size());
    for (uint64_t k = 0; k < n; ++k) ++counts[draw(gen)];
    if (specd::g_test(p, counts).p_value < alpha) ++rejected;
  }
  // Binomial(400, 0.95): sd 4.4; 0.9 is 4.6 sd below the stated power (fixed seed).
  CHECK(rejected >= static_cast<int>(0.9 * trials));
}

TEST_CASE("audit -c audits the rule under every scheme it declares, not only the proposer's") {
  // ngram drafts deterministically, where test-two-scheme is exact: the configuration's own
  // comparison passes, the rule's i.i.d. promise is still checked.
  const std::string dir = specd::test::temp_dir("audit-c-schemes");
  const std::string model = dir + "/target.gguf";
  specd::test::RandomLlamaSpec spec;
  spec.seed = 41;
  spec.weight_scale = 0.3f;
  specd::test::write_random_llama(model, spec);
  specd::PluginRegistry registry({kFailing});
  const specd::Config config =
      specd::parse_config("", "audit.toml",
                          {"target.model=\"" + model + "\"", "engine.backend=cpu",
                           "engine.threads=1", "sampling.temperature=1", "proposer.kind=ngram",
                           "proposer.k=2", "acceptance.rule=test-two-scheme"});
  specd::ConfigAuditOptions o;
  o.prompt = "ab";
  o.samples = 200;
  o.rule_samples = 4000;
  const specd::ConfigAuditResult r = specd::audit_config(config, registry, o);
  CHECK(r.rule_schemes == "deterministic, iid");
  CHECK(r.rule_verdict == "label-wrong");
  CHECK(contains(r.rule_summary, "iid drafts"));
  CHECK(r.verdict == "label-wrong");
}
