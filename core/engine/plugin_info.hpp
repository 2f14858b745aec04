// What `specd plugins` shows about a loaded plugin: the lossless label of an acceptance
// rule, the availability of a backend on this machine, what a proposer drafts.
#pragma once

#include <string>

#include "plugin/registry.hpp"

namespace specd {

struct PluginInfo {
  const LoadedPlugin* plugin = nullptr;
  std::string label;      // acceptance rules: "exact", "greedy-exact", "lossy"
  bool available = true;  // backends: score > 0
  uint32_t score = 0;     // backends: 0 = cannot run here
  std::string reason;     // backends: why not available (or a short description)
  // proposers: the vtable's flags and default rule
  bool trees = false;            // SPECD_PROPOSER_TREES: may draft trees, not only chains
  bool provides_q = false;       // SPECD_PROPOSER_PROVIDES_Q: gives draft distributions
  bool target_features = false;  // SPECD_PROPOSER_NEEDS_TARGET_HIDDEN
  std::string default_rule;      // the rule used when the configuration names none
  // "trees, q, target features; default rule exact-match" (proposers), the label (rules),
  // availability (backends): the DETAILS column of `specd plugins`.
  std::string details() const;
};

PluginInfo describe_plugin(const LoadedPlugin& plugin);

}  // namespace specd
