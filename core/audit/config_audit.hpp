// `specd audit -c CONFIG`: the lossless check on a real configuration. The configured
// speculative engine and plain decoding (the same file with [proposer] kind = "none")
// each generate the first n tokens after a prompt many times with independent seeds; a
// two-sample chi-square test of homogeneity (rare outcomes pooled) says whether the two
// output distributions differ.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.hpp"
#include "plugin/registry.hpp"

namespace specd {

struct ConfigAuditOptions {
  std::string prompt = "def ";
  uint32_t tokens = 1;     // length of the generated prefix whose distribution is compared
  uint64_t samples = 2000; // runs per arm
  uint64_t seed = 1;
  double alpha = 1e-3;     // significance: the chance of a false "label wrong" per audit
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
  double tau = 0;       // of the speculative arm, over all its runs
  std::string verdict;  // "lossless", "lossy", "label-wrong", "not-applicable"
  std::string summary;  // one line for people
};

ConfigAuditResult audit_config(const Config& config, const PluginRegistry& registry,
                               const ConfigAuditOptions& options);

}  // namespace specd
