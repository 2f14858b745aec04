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

// The same, objects keeping their keys in the text's order (a call's arguments, a tool's
// schema: where a model or a client reads the order). For short texts: it parses twice.
nlohmann::ordered_json parse_ordered_json_body(std::string_view body,
                                               const std::string& code = "invalid_request_error");

// The member `key` of the JSON object text `body`, which parse_json_body has read (so well
// formed and within the limits), parsed keeping its objects' keys in order; the last one
// where the key repeats, as the parse keeps it; null where the body has no such member.
nlohmann::ordered_json ordered_member(std::string_view body, std::string_view key);

}  // namespace specd::server
