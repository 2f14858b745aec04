// Parsing a request body as JSON with its limits (common/json_text.hpp), refused as a
// request error.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace specd::server {

// The body as JSON. Throws RequestError (400 with `code`) naming the reason.
nlohmann::json parse_json_body(std::string_view body,
                               const std::string& code = "invalid_request_error");

}  // namespace specd::server
