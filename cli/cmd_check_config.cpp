// specd check-config FILE [--set section.key=value]...
#include <cstdio>

#include "args.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "config/config.hpp"

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
  std::printf("%s: ok\n", path.c_str());
  return 0;
}

}  // namespace specd::cli
