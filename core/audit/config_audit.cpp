#include "audit/config_audit.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "acceptance/acceptance_rule.hpp"
#include "acceptance/labels.hpp"
#include "audit/audit_engine.hpp"
#include "audit/distribution_tests.hpp"
#include "audit/markov_model.hpp"
#include "common/error.hpp"
#include "engine/engine.hpp"
#include "engine/plugin_params.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {
namespace {

// Counts of each generated prefix over `samples` runs with seeds seed, seed+1, ...
std::map<std::vector<int32_t>, uint64_t> sample_prefixes(Engine& engine,
                                                         const std::vector<int32_t>& prompt,
                                                         const ConfigAuditOptions& o, uint64_t seed,
                                                         double* tau) {
  std::map<std::vector<int32_t>, uint64_t> counts;
  uint64_t tokens = 0, rounds = 0;
  GenerateOptions g;
  g.max_tokens = static_cast<int>(o.tokens);
  for (uint64_t i = 0; i < o.samples; ++i) {
    engine.reseed(seed + i);
    GenerationResult r = engine.generate_tokens(prompt, g);
    ++counts[r.tokens];
    tokens += r.stats.generated_tokens;
    rounds += r.stats.rounds;
  }
  if (tau) *tau = rounds ? double(tokens) / double(rounds) : 0;
  return counts;
}

// The configured rule on the Markov toy models under every scheme it declares.
void audit_rule_schemes(const Config& config, const PluginRegistry& registry,
                        const std::string& rule_name, const ConfigAuditOptions& o,
                        ConfigAuditResult& r) {
  try {
    const LoadedPlugin& plugin = registry.require(rule_name, SPECD_KIND_ACCEPTANCE);
    PluginParams params(config.acceptance.params, plugin.abi_minor);
    AcceptanceRule rule(plugin, params.raw());
    r.rule_schemes = supported_schemes(rule.flags());
    AuditOptions a;
    a.sampling.temperature = config.sampling.temperature;
    a.sampling.top_k = config.sampling.top_k;
    a.sampling.top_p = config.sampling.top_p;
    a.sampling.min_p = config.sampling.min_p;
    a.samples = o.rule_samples;
    a.seed = o.seed;
    a.alpha = o.alpha;
    const AuditReport report = run_audit({&rule}, builtin_markov_models(), a);
    r.rule_verdict = report.rules.at(0).verdict;
    r.rule_summary = report.rules.at(0).summary;
  } catch (const std::exception& e) {
    r.rule_verdict = "error";
    r.rule_summary = std::string("ERROR: could not run: ") + e.what();
  }
}

}  // namespace

ConfigAuditResult audit_config(const Config& config, const PluginRegistry& registry,
                               const ConfigAuditOptions& o) {
  if (config.proposer.kind == "none")
    throw UsageError(config.where("proposer.kind") +
                     ": nothing to audit: [proposer] kind is \"none\" (plain decoding)");
  if (o.samples < 10) throw UsageError("--samples must be at least 10");
  Config plain_config = config;
  plain_config.proposer.kind = "none";
  plain_config.proposer.params.clear();
  // Every stop condition but the length would end runs at different places; keep them out.
  plain_config.sampling.ignore_eos = true;
  plain_config.sampling.stop.clear();
  Config spec_config = config;
  spec_config.sampling.ignore_eos = true;
  spec_config.sampling.stop.clear();

  Engine spec(spec_config, registry);
  Engine plain(plain_config, registry);
  std::vector<int32_t> prompt = plain.tokenizer().encode(o.prompt, true);
  if (prompt.empty()) throw UsageError("the audit prompt is empty");

  ConfigAuditResult r;
  r.proposer = spec.proposer_name();
  r.rule = spec.rule_name();
  r.temperature = config.sampling.temperature;
  r.samples = o.samples;
  // Independent seeds for the two arms (the test assumes independent samples).
  auto a = sample_prefixes(spec, prompt, o, o.seed, &r.tau);
  auto b = sample_prefixes(plain, prompt, o, o.seed + 0x9E3779B97F4A7C15ull, nullptr);

  std::map<std::vector<int32_t>, std::pair<uint64_t, uint64_t>> joint;
  for (auto& [k, n] : a) joint[k].first += n;
  for (auto& [k, n] : b) joint[k].second += n;
  r.outcomes = joint.size();
  // Pool outcomes whose expected count per arm is below 5 into one bin.
  std::vector<std::pair<double, double>> bins;
  std::pair<double, double> pooled{0, 0};
  double tv = 0;
  for (auto& [k, n] : joint) {
    tv += std::fabs(double(n.first) - double(n.second));
    if ((n.first + n.second) / 2.0 < 5.0) {
      pooled.first += double(n.first);
      pooled.second += double(n.second);
    } else {
      bins.emplace_back(double(n.first), double(n.second));
    }
  }
  if (pooled.first + pooled.second > 0) bins.push_back(pooled);
  r.tv = 0.5 * tv / double(o.samples);
  r.bins = bins.size();
  for (auto& [x, y] : bins) {
    double e = (x + y) / 2.0;  // equal sample sizes
    r.chi2 += (x - e) * (x - e) / e + (y - e) * (y - e) / e;
  }
  r.p_value = bins.size() > 1 ? chi2_survival(r.chi2, double(bins.size() - 1)) : 1.0;

  std::string label = spec.rule_label();
  r.label = label;
  char line[256];
  if (label == "lossy") {
    r.verdict = "lossy";
    std::snprintf(line, sizeof line, "lossy (measured TV %.3g, p = %.3g)", r.tv, r.p_value);
  } else if (label == "greedy-exact" && r.temperature > 0) {
    r.verdict = "not-applicable";
    std::snprintf(line, sizeof line, "greedy-exact: no claim at temperature %g (TV %.3g)",
                  r.temperature, r.tv);
  } else if (r.p_value < o.alpha) {
    r.verdict = "label-wrong";
    std::snprintf(line, sizeof line, "LABEL WRONG: outputs differ (TV %.3g, p = %.3g < %g)", r.tv,
                  r.p_value, o.alpha);
  } else {
    r.verdict = "lossless";
    std::snprintf(line, sizeof line, "lossless: no difference found (p = %.3g >= %g, TV %.3g)",
                  r.p_value, o.alpha, r.tv);
  }
  r.summary = line;
  audit_rule_schemes(config, registry, spec.rule_name(), o, r);
  if (r.rule_verdict == "label-wrong" && r.verdict != "label-wrong") {
    r.verdict = "label-wrong";
    r.summary = "LABEL WRONG: the rule fails its label on the Markov audit (" + r.rule_summary +
                "); this configuration: " + r.summary;
  } else if (r.rule_verdict == "error" && r.verdict != "label-wrong") {
    r.verdict = "error";
    r.summary = "the rule's Markov audit could not run (" + r.rule_summary +
                "); this configuration: " + r.summary;
  }
  return r;
}

}  // namespace specd
