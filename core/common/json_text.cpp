#include "common/json_text.hpp"

namespace specd {
namespace {

// The byte offset where the nesting first goes deeper than `max`, or npos. Brackets inside
// strings do not count.
size_t too_deep_at(std::string_view text, int max) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& what) {
  if (const size_t at = too_deep_at(text, kMaxJsonNesting); at != std::string_view::npos)
    throw JsonTextError(what + " nests deeper than " + std::to_string(kMaxJsonNesting) +
                        " levels (at byte " + std::to_string(at) + ")");
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.what(): "[json.exception.parse_error.101] parse error at line 1, column 9: <reason>"
    std::string reason = e.what();
    if (const size_t p = reason.find("] "); p != std::string::npos) reason = reason.substr(p + 2);
    throw JsonTextError(what + " is not valid JSON: " + reason);
  } catch (const nlohmann::json::exception& e) {
    throw JsonTextError(what + " is not valid JSON: " + e.what());
  }
}

}  // namespace specd
