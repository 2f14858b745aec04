// The server's log of failures it answers with 500 (a plugin or the model failing inside a
// request): one line through common/log.hpp, "specd: error: serve: request failed:
// <message>", so that an operator sees what clients were told. Thread rule: any thread.
#pragma once

#include <string_view>

namespace specd::server {

void log_server_error(std::string_view message);

}  // namespace specd::server
