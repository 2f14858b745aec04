#include "engine/plugin_info.hpp"

#include "acceptance/labels.hpp"
#include "backend/backend.hpp"
#include "specd/acceptance.h"
#include "specd/proposer.h"

namespace specd {

PluginInfo describe_plugin(const LoadedPlugin& plugin) {
  PluginInfo info;
  info.plugin = &plugin;
  if (plugin.kind == SPECD_KIND_ACCEPTANCE) {
    auto* vt = static_cast<const specd_acceptance_vtable*>(plugin.vtable);
    info.label = label_name(vt->label);
  }
  if (plugin.kind == SPECD_KIND_PROPOSER) {
    auto* vt = static_cast<const specd_proposer_vtable*>(plugin.vtable);
    if (vt->struct_size >=
        offsetof(specd_proposer_vtable, default_rule) + sizeof(vt->default_rule)) {
      info.trees = vt->flags & SPECD_PROPOSER_TREES;
      info.provides_q = vt->flags & SPECD_PROPOSER_PROVIDES_Q;
      info.target_features = vt->flags & SPECD_PROPOSER_NEEDS_TARGET_HIDDEN;
      info.default_rule = vt->default_rule ? vt->default_rule : "";
    }
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

std::string PluginInfo::details() const {
  if (plugin->kind == SPECD_KIND_BACKEND)
    return available ? "available (score " + std::to_string(score) + ")" : "unavailable: " + reason;
  if (plugin->kind == SPECD_KIND_VERIFIER) return plugin->description;
  if (plugin->kind != SPECD_KIND_PROPOSER) return label;
  std::string out = trees ? "trees" : "chains";
  out += provides_q ? ", q" : ", no q";
  if (target_features) out += ", target features";
  if (!default_rule.empty()) out += "; default rule " + default_rule;
  return out;
}

}  // namespace specd
