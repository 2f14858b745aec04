#include "batching/failure_log.hpp"

#include <string>

#include "common/log.hpp"
#include "common/printable.hpp"

namespace specd::batching {

void log_request_failure(std::string_view message) {
  // Control bytes escaped (a message may quote a plugin's or a file's text), length capped.
  log_message(LogLevel::error, "serve: request failed: " + printable(message, 2000));
}

}  // namespace specd::batching
