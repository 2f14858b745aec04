// JSON text parsed with limits: nesting is checked by a scan before any tree is built (a
// 1 MiB text of brackets would otherwise cost tens of MB of nodes), and malformed text is
// refused with the parser's reason and where it failed. Request bodies, JSON Schema files
// and tool-call arguments all go through it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "common/error.hpp"

namespace specd {

// Deepest array/object nesting accepted.
constexpr int kMaxJsonNesting = 64;

// Thrown for text that nests too deep or is not JSON; the message starts with `what`.
class JsonTextError : public Error {
 public:
  using Error::Error;
};

// `text` as JSON. `what` names it in errors ("the request body", "the file").
nlohmann::json parse_json_text(std::string_view text, const std::string& what);

}  // namespace specd
