// The log of requests that failed inside the engine (a plugin or the model failing while a
// request runs, answered as an internal failure): one line through common/log.hpp,
// "specd: error: serve: request failed: <message>", so that an operator sees what clients
// were told. Thread rule: any thread.
#pragma once

#include <string_view>

namespace specd::batching {

void log_request_failure(std::string_view message);

}  // namespace specd::batching
