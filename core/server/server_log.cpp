#include "server/server_log.hpp"

#include <cstdio>
#include <string>

#include "common/printable.hpp"

namespace specd::server {

void log_server_error(std::string_view message) {
  // Control bytes escaped (a message may quote a plugin's or a file's text), length capped.
  const std::string line = "specd serve: error: " + printable(message, 2000) + "\n";
  std::fputs(line.c_str(), stderr);  // one call: lines from several threads stay whole
}

}  // namespace specd::server
