// Choosing a backend by name at run time: "cpu", "cuda", "hip", a plugin id, or "auto"
// (the highest score among the backends that can run here).
#pragma once

#include <string>

#include "plugin/registry.hpp"

namespace specd {

// Throws UsageError for an unknown name (listing the known ones) and Error when the named
// backend cannot run here ("backend 'cuda' cannot run here: <reason>") or, for "auto", when
// none can.
const LoadedPlugin& select_backend(const PluginRegistry& registry, const std::string& name);

}  // namespace specd
