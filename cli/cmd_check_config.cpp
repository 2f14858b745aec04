// specd check-config FILE [--set section.key=value]... — the schema, then the plugins' checks.
#include <cstdio>

#include "args.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "config/config.hpp"
#include "engine/plugin_checks.hpp"
#include "plugin/registry.hpp"
#include "server/server_checks.hpp"

namespace specd::cli {

int check_config_command(int argc, char** argv) {
  Args args(argc, argv);
  std::string path;
  std::vector<std::string> overrides;
  while (!args.done()) {
    if (args.match("--set")) {
      overrides.push_back(args.value());
    } else if (args.match("--help", "-h")) {
      std::puts("usage: specd check-config FILE [--set section.key=value]...");
      return 0;
    } else if (path.empty() && args.peek().rfind("-", 0) != 0) {
      path = args.positional();
    } else {
      args.unknown();
    }
  }
  if (path.empty()) throw UsageError("check-config needs a FILE");
  Config config = load_config(path, overrides);  // throws with every problem listed
  // The plugins' own checks (proposer and rule parameters, rule and pairing), as run makes
  // them, loading no model.
  PluginRegistry registry(config.plugins.paths);
  check_config_plugins(config, registry);
  // What `serve` checks before listening ([server] is read by serve alone, but a file it
  // would refuse is not ok).
  server::configured_chat_family(config);
  server::check_server_host(config);
  server::check_server_limits(config);
  if (config.proposer.kind_auto)
    std::printf("[proposer] kind = \"auto\": %s\n", config.proposer.kind.c_str());
  std::printf("%s: ok\n", path.c_str());
  flush_stdout();  // before the registry unloads plugins: see flush_stdout
  return 0;
}

}  // namespace specd::cli
