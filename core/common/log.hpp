// Logging to stderr with a level threshold (set from the CLI's -v / --quiet).
#pragma once

#include <string>

namespace specd {

enum class LogLevel { debug = 0, info = 1, warn = 2, error = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
// Thread-safe; one line per call.
void log_message(LogLevel level, const std::string& message);

}  // namespace specd
