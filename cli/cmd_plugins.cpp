// specd plugins [--json] [--plugin-path DIR]... — what is installed and what can run here.
#include <cstdio>

#include "args.hpp"
#include "commands.hpp"
#include "common/file_io.hpp"
#include "common/json_writer.hpp"
#include "engine/plugin_info.hpp"
#include "plugin/registry.hpp"

namespace specd::cli {

int plugins_command(int argc, char** argv) {
  Args args(argc, argv);
  bool json = false;
  std::vector<std::string> paths;
  while (!args.done()) {
    if (args.match("--json")) {
      json = true;
    } else if (args.match("--plugin-path")) {
      paths.push_back(args.value());
    } else if (args.match("--help", "-h")) {
      std::puts("usage: specd plugins [--json] [--plugin-path DIR]...");
      return 0;
    } else {
      args.unknown();
    }
  }
  PluginRegistry registry(paths);
  std::vector<PluginInfo> infos;
  for (const LoadedPlugin* p : registry.plugins()) infos.push_back(describe_plugin(*p));

  if (json) {
    JsonWriter w;
    w.begin_object().key("plugins").begin_array();
    for (const PluginInfo& info : infos) {
      w.begin_object();
      w.key("id").value(info.plugin->id);
      w.key("name").value(info.plugin->name);
      w.key("kind").value(kind_name(info.plugin->kind));
      w.key("version").value(info.plugin->version);
      w.key("abi").value(std::to_string(info.plugin->abi_major) + "." +
                         std::to_string(info.plugin->abi_minor));
      w.key("built_abi")
          .value(std::to_string(info.plugin->abi_major) + "." +
                 std::to_string(info.plugin->built_minor));
      w.key("min_host_abi")
          .value(std::to_string(info.plugin->abi_major) + "." +
                 std::to_string(info.plugin->min_host_minor));
      w.key("path").value(info.plugin->path);
      w.key("description").value(info.plugin->description);
      if (!info.label.empty()) w.key("label").value(info.label);
      if (info.plugin->kind == SPECD_KIND_PROPOSER) {
        w.key("trees").value(info.trees);
        w.key("provides_q").value(info.provides_q);
        w.key("target_features").value(info.target_features);
        w.key("default_rule").value(info.default_rule);
      }
      if (info.plugin->kind == SPECD_KIND_BACKEND) {
        w.key("available").value(info.available);
        w.key("score").value(static_cast<uint64_t>(info.score));
        w.key("reason").value(info.reason);
      }
      w.end_object();
    }
    w.end_array().key("errors").begin_array();
    for (const auto& e : registry.errors())
      w.begin_object().key("path").value(e.path).key("message").value(e.message).end_object();
    w.end_array().key("search_path").begin_array();
    for (const auto& p : registry.search_path()) w.value(p);
    w.end_array().end_object();
    std::printf("%s\n", w.str().c_str());
    flush_stdout();  // before the registry unloads plugins: see flush_stdout
    return 0;
  }

  // ABI: what the plugin was built against; "0.8>=0.6" when it declares it runs on older
  // hosts (min_host_abi_minor).
  std::printf("%-12s %-36s %-9s %-8s %s\n", "KIND", "ID", "VERSION", "ABI", "DETAILS");
  for (const PluginInfo& info : infos) {
    const std::string details = info.details();
    const LoadedPlugin& p = *info.plugin;
    std::string abi = std::to_string(p.abi_major) + "." + std::to_string(p.built_minor);
    if (p.min_host_minor != p.built_minor)
      abi += ">=" + std::to_string(p.abi_major) + "." + std::to_string(p.min_host_minor);
    std::printf("%-12s %-36s %-9s %-8s %s\n", kind_name(p.kind), p.id.c_str(), p.version.c_str(),
                abi.c_str(), details.c_str());
    std::printf("%-12s %s\n", "", info.plugin->path.c_str());
  }
  // Not a file: the default of [verifier] kind, for completeness of the verifier choices.
  std::printf("%-12s %-36s %-9s %-8s %s\n", "verifier", "target (built in)", "-", "-",
              "the [target] model in this process ([verifier] kind default)");
  for (const auto& e : registry.errors())
    std::fprintf(stderr, "specd: warning: %s\n", e.message.c_str());
  if (infos.empty()) std::printf("(no plugins found)\n");
  flush_stdout();
  return 0;
}

}  // namespace specd::cli
