#include "common/log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace specd {
namespace {
// SPECD_LOG_LEVEL (debug, info, warning, error) sets the threshold; warning otherwise.
int initial_level() {
  const char* v = std::getenv("SPECD_LOG_LEVEL");
  if (!v) return static_cast<int>(LogLevel::warn);
  if (!std::strcmp(v, "debug")) return static_cast<int>(LogLevel::debug);
  if (!std::strcmp(v, "info")) return static_cast<int>(LogLevel::info);
  if (!std::strcmp(v, "error")) return static_cast<int>(LogLevel::error);
  if (std::strcmp(v, "warning") != 0 && std::strcmp(v, "warn") != 0)
    std::fprintf(stderr,
                 "specd: warning: SPECD_LOG_LEVEL='%.40s' is none of debug, info, warning, error; "
                 "using warning\n",
                 v);
  return static_cast<int>(LogLevel::warn);
}
std::atomic<int> g_level{initial_level()};
std::mutex g_mutex;
const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warn:
      return "warning";
    case LogLevel::error:
      return "error";
  }
  return "?";
}
}  // namespace

void set_log_level(LogLevel level) {
  g_level = static_cast<int>(level);
}
LogLevel log_level() {
  return static_cast<LogLevel>(g_level.load());
}

void log_message(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < g_level.load()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "specd: %s: %s\n", level_name(level), message.c_str());
}

}  // namespace specd
