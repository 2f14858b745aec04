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
