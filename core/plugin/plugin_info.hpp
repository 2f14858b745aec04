// What `specd plugins` shows about a loaded plugin: the lossless label of an acceptance
// rule, the availability of a backend on this machine.
#pragma once

#include <string>

#include "plugin/registry.hpp"

namespace specd {

struct PluginInfo {
  const LoadedPlugin* plugin = nullptr;
  std::string label;       // acceptance rules: "exact", "greedy-exact", "lossy"
  bool available = true;   // backends: score > 0
  uint32_t score = 0;      // backends: 0 = cannot run here
  std::string reason;      // backends: why not available (or a short description)
};

PluginInfo describe_plugin(const LoadedPlugin& plugin);

}  // namespace specd
