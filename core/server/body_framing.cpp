#include "server/body_framing.hpp"

namespace specd::server {
namespace {

// The value as a length: decimal digits only (no sign, no space), at most 18 of them.
std::optional<uint64_t> parse_length(const std::string& value) {
  if (value.empty() || value.size() > 18) return std::nullopt;
  uint64_t n = 0;
  for (char c : value) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + uint64_t(c - '0');
  }
  return n;
}

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] >= 'A' && a[i] <= 'Z' ? char(a[i] - 'A' + 'a') : a[i];
    const char y = b[i] >= 'A' && b[i] <= 'Z' ? char(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

BodyHeaders scan_body_headers(std::string_view head) {
  BodyHeaders found;
  size_t at = head.find("\r\n");  // past the request line
  while (at != std::string_view::npos && at + 2 < head.size()) {
    const size_t start = at + 2;
    const size_t end = head.find("\r\n", start);
    const std::string_view line =
        head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    at = end;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trimmed(line.substr(colon + 1));
    if (same_name(name, "content-length"))
      found.content_length.emplace_back(value);
    else if (same_name(name, "transfer-encoding"))
      found.transfer_encoding.emplace_back(value);
  }
  return found;
}

std::optional<FramingRefusal> check_body_framing(const BodyHeaders& headers,
                                                 uint64_t max_body_bytes) {
  if (!headers.transfer_encoding.empty() && !headers.content_length.empty())
    return FramingRefusal{400,
                          "the request has both Content-Length and Transfer-Encoding; send one "
                          "(RFC 9112 section 6.3)",
                          "invalid_framing"};
  if (!headers.transfer_encoding.empty())
    return FramingRefusal{411,
                          "Transfer-Encoding '" + headers.transfer_encoding.front() +
                              "' is not accepted for request bodies: send the body with a "
                              "Content-Length",
                          "length_required"};
  if (headers.content_length.empty()) return std::nullopt;
  const std::optional<uint64_t> length = parse_length(headers.content_length.front());
  for (const std::string& value : headers.content_length)
    if (!length || parse_length(value) != length)
      return FramingRefusal{400, "Content-Length '" + value + "' is not one decimal length",
                            "invalid_framing"};
  if (*length > max_body_bytes)
    return FramingRefusal{
        413,
        "the request body exceeds the server's max_body_bytes of " + std::to_string(max_body_bytes),
        "request_too_large"};
  return std::nullopt;
}

}  // namespace specd::server
