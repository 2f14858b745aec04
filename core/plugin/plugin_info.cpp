#include "plugin/plugin_info.hpp"

#include "specd/acceptance.h"
#if __has_include("backend/backend_score.hpp")
#include "backend/backend_score.hpp"
#define SPECD_HAVE_BACKEND_SCORE 1
#endif

namespace specd {

std::string label_name(uint32_t label) {
  switch (label) {
    case SPECD_LABEL_EXACT: return "exact";
    case SPECD_LABEL_GREEDY_EXACT: return "greedy-exact";
    case SPECD_LABEL_LOSSY: return "lossy";
    default: return "unknown(" + std::to_string(label) + ")";
  }
}

PluginInfo describe_plugin(const LoadedPlugin& plugin) {
  PluginInfo info;
  info.plugin = &plugin;
  if (plugin.kind == SPECD_KIND_ACCEPTANCE) {
    auto* vt = static_cast<const specd_acceptance_vtable*>(plugin.vtable);
    info.label = label_name(vt->label);
  }
#ifdef SPECD_HAVE_BACKEND_SCORE
  if (plugin.kind == SPECD_KIND_BACKEND) {
    BackendScore s = backend_score(plugin);
    info.available = s.score > 0;
    info.score = s.score;
    info.reason = s.reason;
  }
#endif
  return info;
}

}  // namespace specd
