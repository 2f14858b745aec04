#include "plugin/plugin_info.hpp"

#include "acceptance/labels.hpp"
#include "specd/acceptance.h"
#include "backend/backend.hpp"

namespace specd {

PluginInfo describe_plugin(const LoadedPlugin& plugin) {
  PluginInfo info;
  info.plugin = &plugin;
  if (plugin.kind == SPECD_KIND_ACCEPTANCE) {
    auto* vt = static_cast<const specd_acceptance_vtable*>(plugin.vtable);
    info.label = label_name(vt->label);
  }
  if (plugin.kind == SPECD_KIND_BACKEND) {
    try {
      info.score = Backend(plugin).score(&info.reason);
    } catch (const std::exception& e) {  // a broken backend is unavailable, not fatal
      info.score = 0;
      info.reason = e.what();
    }
    info.available = info.score > 0;
  }
  return info;
}

}  // namespace specd
