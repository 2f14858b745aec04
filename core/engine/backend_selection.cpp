#include "engine/backend_selection.hpp"

#include "backend/backend.hpp"
#include "common/error.hpp"

namespace specd {

const LoadedPlugin& select_backend(const PluginRegistry& registry, const std::string& name) {
  if (name == "auto") {
    const LoadedPlugin* best = nullptr;
    uint32_t best_score = 0;
    std::string reasons;
    for (const LoadedPlugin* p : registry.of_kind(SPECD_KIND_BACKEND)) {
      std::string reason;
      uint32_t score = Backend(*p).score(&reason);
      if (score > best_score) {
        best = p;
        best_score = score;
      } else if (score == 0) {
        reasons += "\n  " + p->name + ": " + reason;
      }
    }
    if (!best) throw Error("backend = \"auto\": no backend can run here" + reasons);
    return *best;
  }
  const LoadedPlugin& plugin = registry.require(name, SPECD_KIND_BACKEND);
  std::string reason;
  if (Backend(plugin).score(&reason) == 0)
    throw Error("backend '" + plugin.name + "' (" + plugin.id + ") cannot run here: " + reason);
  return plugin;
}

}  // namespace specd
