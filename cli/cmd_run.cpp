// specd run -c FILE [-p PROMPT] [-n N] [--set section.key=value]... [--json]
#include <cstdio>

#include "args.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "config/config.hpp"

namespace specd::cli {

int run_command(int argc, char** argv) {
  Args args(argc, argv);
  std::string config_path;
  std::vector<std::string> overrides;
  while (!args.done()) {
    if (args.match("--config", "-c")) {
      config_path = args.value();
    } else if (args.match("--set")) {
      overrides.push_back(args.value());
    } else {
      args.unknown();
    }
  }
  if (config_path.empty()) throw UsageError("run needs -c FILE");
  Config config = load_config(config_path, overrides);
  throw Error("the engine is not built yet");
}

}  // namespace specd::cli
