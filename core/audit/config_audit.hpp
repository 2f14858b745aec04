// `specd audit -c CONFIG`: the lossless check on a real configuration. The configured
// speculative engine and plain decoding (the same file with [proposer] kind = "none")
// each generate the first n tokens after a prompt many times with independent seeds; a
// two-sample chi-square test of homogeneity (rare outcomes pooled) says whether the two
// output distributions differ. The configured proposer drafts with one sibling scheme only,
// so the configured rule (its [acceptance] parameters, the configuration's sampling) is also
// audited on the Markov toy models under every scheme it declares (audit_engine.hpp); a
// label wrong there is a wrong label here.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "plugin/registry.hpp"

namespace specd {

struct ConfigAuditOptions {
  std::string prompt = "def ";
  uint32_t tokens = 1;      // length of the generated prefix whose distribution is compared
  uint64_t samples = 2000;  // runs per arm
  uint64_t seed = 1;
  double alpha = 1e-3;            // significance: the chance of a false "label wrong" per audit
  uint64_t rule_samples = 20000;  // Monte-Carlo runs per case of the rule's Markov audit
};

struct ConfigAuditResult {
  std::string proposer, rule, label;  // label: the rule's declared lossless label
  double temperature = 0;
  uint64_t samples = 0;
  size_t outcomes = 0;  // distinct prefixes seen (both arms)
  size_t bins = 0;      // after pooling rare outcomes
  double tv = 0;        // total variation between the two empirical distributions
  double chi2 = 0;
  double p_value = 1;
  double tau = 0;  // of the speculative arm, over all its runs
  // "lossless", "lossy", "label-wrong", "not-applicable", "error" (the rule audit could
  // not run; the comparison found no wrong label)
  std::string verdict;
  std::string summary;  // one line for people
  // The rule's Markov audit under every declared scheme.
  std::string rule_schemes;  // e.g. "deterministic, iid"
  std::string rule_verdict;  // RuleAudit::verdict
  std::string rule_summary;  // RuleAudit::summary
};

ConfigAuditResult audit_config(const Config& config, const PluginRegistry& registry,
                               const ConfigAuditOptions& options);

}  // namespace specd
