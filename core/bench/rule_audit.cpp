#include "bench/rule_audit.hpp"

#include "acceptance/acceptance_rule.hpp"
#include "acceptance/labels.hpp"
#include "audit/audit_engine.hpp"
#include "audit/markov_model.hpp"
#include "engine/plugin_params.hpp"

namespace specd::bench {

const RuleVerdict& RuleAuditCache::verdict(const std::string& rule, const Config& config) {
  const SamplingConfig& s = config.sampling;
  std::string key = rule + "|" + std::to_string(s.temperature) + "|" + std::to_string(s.top_k) +
                    "|" + std::to_string(s.top_p) + "|" + std::to_string(s.min_p);
  for (const PluginParam& p : config.acceptance.params)
    key += "|" + p.key + "=" + p.string_value + std::to_string(p.int_value) +
           std::to_string(p.float_value);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;

  const LoadedPlugin& plugin = registry_.require(rule, SPECD_KIND_ACCEPTANCE);
  PluginParams params(config.acceptance.params, plugin.abi_minor);
  AcceptanceRule accept(plugin, params.raw());
  AuditOptions options;
  options.sampling.temperature = s.temperature;
  options.sampling.top_k = s.top_k;
  options.sampling.top_p = s.top_p;
  options.sampling.min_p = s.min_p;
  options.samples = samples_;
  const AuditReport report = run_audit({&accept}, builtin_markov_models(), options);
  RuleVerdict v;
  v.label = label_name(accept.label());
  if (!report.rules.empty()) {
    v.verdict = report.rules[0].verdict;
    v.summary = report.rules[0].summary;
  }
  return cache_.emplace(key, v).first->second;
}

std::string lossy_mark(const std::string& label, const std::string& verdict) {
  return label == "lossy" || verdict == "lossy" || verdict == "label-wrong" ? "⚠ lossy" : "";
}

}  // namespace specd::bench
