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

nlohmann::ordered_json parse_ordered_json_body(std::string_view body, const std::string& code) {
  parse_json_body(body, code);  // the limits first, and the reason where it is no JSON
  return nlohmann::ordered_json::parse(body.begin(), body.end());
}

namespace {

constexpr size_t npos = std::string_view::npos;

size_t skip_space(std::string_view t, size_t i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) ++i;
  return i;
}

// One past the closing quote of the string that opens at t[i].
size_t string_end(std::string_view t, size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] == '\\')
      ++i;
    else if (t[i] == '"')
      return i + 1;
  }
  return npos;
}

// One past the value that starts at t[i].
size_t value_end(std::string_view t, size_t i) {
  if (i >= t.size()) return npos;
  if (t[i] == '"') return string_end(t, i);
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    for (; i < t.size(); ++i) {
      if (t[i] == '"') {
        i = string_end(t, i);
        if (i == npos) return npos;
        --i;
      } else if (t[i] == '{' || t[i] == '[') {
        ++depth;
      } else if ((t[i] == '}' || t[i] == ']') && --depth == 0) {
        return i + 1;
      }
    }
    return npos;
  }
  while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != ' ' && t[i] != '\t' &&
         t[i] != '\n' && t[i] != '\r')
    ++i;
  return i;
}

}  // namespace

nlohmann::ordered_json ordered_member(std::string_view body, std::string_view key) {
  try {
    std::string_view found;
    size_t i = skip_space(body, 0);
    if (i == body.size() || body[i] != '{') return nullptr;
    for (i = skip_space(body, i + 1); i < body.size() && body[i] == '"';) {
      const size_t key_end = string_end(body, i);
      if (key_end == npos) return nullptr;
      const std::string_view k = body.substr(i, key_end - i);
      i = skip_space(body, key_end);
      if (i == body.size() || body[i] != ':') return nullptr;
      i = skip_space(body, i + 1);
      const size_t end = value_end(body, i);
      if (end == npos) return nullptr;
      const bool match = k.find('\\') == npos ? k.substr(1, k.size() - 2) == key
                                              : nlohmann::json::parse(k).get<std::string>() == key;
      if (match) found = body.substr(i, end - i);
      i = skip_space(body, end);
      if (i < body.size() && body[i] == ',') i = skip_space(body, i + 1);
    }
    if (found.empty()) return nullptr;
    return nlohmann::ordered_json::parse(found.begin(), found.end());
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

}  // namespace specd::server
