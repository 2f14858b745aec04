// Parsing a request body as JSON with its limits: nesting is checked by a scan before any
// tree is built (a 1 MiB body of brackets would otherwise cost tens of MB of nodes), and a
// malformed body is refused with the parser's reason and the byte where it failed.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace specd::server {

// Deepest array/object nesting a request body may have.
constexpr int kMaxJsonNesting = 64;

// The body as JSON. Throws RequestError (400 with `code`) naming the reason.
nlohmann::json parse_json_body(std::string_view body,
                               const std::string& code = "invalid_request_error");

}  // namespace specd::server
