// Request framing checked from the headers (server/body_framing.hpp): what is refused with
// which status, and what passes.
#include <doctest/doctest.h>

#include "server/body_framing.hpp"

using specd::server::BodyHeaders;
using specd::server::check_body_framing;

namespace {

int status_of(const BodyHeaders& h, uint64_t max = 1000) {
  const auto refused = check_body_framing(h, max);
  return refused ? refused->status : 0;
}

}  // namespace

TEST_CASE("body framing: one decimal Content-Length within the limit passes") {
  CHECK(status_of({}) == 0);  // no body
  CHECK(status_of({{"0"}, {}}) == 0);
  CHECK(status_of({{"1000"}, {}}) == 0);
  CHECK(status_of({{"12", "12"}, {}}) == 0);  // repeated, the same: RFC 9112 allows it
}

TEST_CASE("body framing: refusals and their statuses") {
  CHECK(status_of({{}, {"chunked"}}) == 411);
  CHECK(status_of({{"5"}, {"chunked"}}) == 400);
  CHECK(status_of({{"1001"}, {}}) == 413);
  CHECK(status_of({{"999999999999999999"}, {}}) == 413);
  for (const char* bad :
       {"-1", "", "+5", " 5", "5 ", "0x10", "1e3", "18446744073709551616", "1234567890123456789"}) {
    CAPTURE(bad);
    CHECK(status_of({{bad}, {}}) == 400);
  }
  CHECK(status_of({{"12", "13"}, {}}) == 400);
  const auto refused = check_body_framing({{}, {"gzip, chunked"}}, 10);
  REQUIRE(refused);
  CHECK(refused->code == "length_required");
  CHECK(refused->message.find("gzip, chunked") != std::string::npos);
}

TEST_CASE("body framing: the lengths and codings are read from the raw head") {
  using specd::server::scan_body_headers;
  const BodyHeaders h = scan_body_headers(
      "POST /x HTTP/1.1\r\nHost: a\r\ncontent-LENGTH:  12 \r\nX-Content-Length: 9\r\n"
      "Transfer-Encoding:\tchunked\r\nContent-Length: -1\r\n\r\n");
  REQUIRE(h.content_length.size() == 2);
  CHECK(h.content_length[0] == "12");
  CHECK(h.content_length[1] == "-1");
  REQUIRE(h.transfer_encoding.size() == 1);
  CHECK(h.transfer_encoding[0] == "chunked");
  // The request line is not a header, even when it looks like one.
  CHECK(scan_body_headers("Content-Length: 5\r\n\r\n").content_length.empty());
  CHECK(scan_body_headers("GET / HTTP/1.1\r\n\r\n").content_length.empty());
  CHECK(status_of(scan_body_headers("POST / HTTP/1.1\r\nContent-Length: 5\r\n"
                                    "Transfer-Encoding: chunked\r\n\r\n")) == 400);
}
