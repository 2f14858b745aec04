// How a request frames its body, checked from its headers before any byte of the body is
// read, so that every byte a client sends counts against max_body_bytes (RFC 9112 §6):
//   - Content-Length and Transfer-Encoding together: refused, 400 (§6.3: the conflict is how
//     one request hides inside another behind a proxy that trusts the other header);
//   - Transfer-Encoding (chunked) alone: refused, 411 Length Required (§6.3 lets a server
//     require a length; every OpenAI client sends one), so a body's size is known before it
//     is read;
//   - a Content-Length that is not one decimal number (or several that disagree): 400;
//   - a Content-Length over max_body_bytes: 413, without reading the body.
// Thread rule: a pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::server {

struct BodyHeaders {
  std::vector<std::string> content_length;     // every Content-Length value, as sent
  std::vector<std::string> transfer_encoding;  // every Transfer-Encoding value, as sent
};

// The Content-Length and Transfer-Encoding values of a request head as received (the request
// line, then header lines, each ended by CRLF; names case-insensitive, values without the
// spaces around them), read before any HTTP parser sees the head so that a conflict is
// refused with its own message rather than a parser's.
BodyHeaders scan_body_headers(std::string_view head);

struct FramingRefusal {
  int status;
  std::string message;
  std::string code;
};

std::optional<FramingRefusal> check_body_framing(const BodyHeaders& headers,
                                                 uint64_t max_body_bytes);

}  // namespace specd::server
