#include "server/json_body.hpp"

#include "common/json_text.hpp"
#include "server/request.hpp"

namespace specd::server {

nlohmann::json parse_json_body(std::string_view body, const std::string& code) {
  try {
    return parse_json_text(body, "the request body");
  } catch (const JsonTextError& e) {
    throw RequestError(400, "", e.what(), code);
  }
}

}  // namespace specd::server
