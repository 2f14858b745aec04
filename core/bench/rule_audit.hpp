// The lossless column: a rule's declared label and the verdict of `specd audit` (the
// Markov audit of core/audit) for that rule at the arm's sampling settings. Results are
// cached per (rule, parameters, sampling) for the life of the object.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "plugin/registry.hpp"

namespace specd::bench {

struct RuleVerdict {
  std::string label;    // declared: "exact", "greedy-exact", "lossy"
  std::string verdict;  // measured: "lossless", "lossy", "label-wrong"
  std::string summary;  // the audit's one-line summary
};

class RuleAuditCache {
 public:
  RuleAuditCache(const PluginRegistry& registry, uint64_t samples)
      : registry_(registry), samples_(samples) {}

  // Audits `rule` (id or name) with the [acceptance] parameters and sampling of `config`.
  const RuleVerdict& verdict(const std::string& rule, const Config& config);

 private:
  const PluginRegistry& registry_;
  uint64_t samples_;
  std::map<std::string, RuleVerdict> cache_;
};

// "⚠ lossy" for lossy labels or verdicts, else "".
std::string lossy_mark(const std::string& label, const std::string& verdict);

}  // namespace specd::bench
