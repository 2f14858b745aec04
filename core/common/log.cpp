#include "common/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace specd {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::warn)};
std::mutex g_mutex;
const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warn: return "warning";
    case LogLevel::error: return "error";
  }
  return "?";
}
}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }

void log_message(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < g_level.load()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "specd: %s: %s\n", level_name(level), message.c_str());
}

}  // namespace specd
