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

}  // namespace

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
