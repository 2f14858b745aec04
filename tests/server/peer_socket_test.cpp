// A handler sees its client hang up: real loopback sockets, no timing involved (a close is
// visible at once).
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/peer_socket.hpp"

using namespace specd::server;

namespace {

int local_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("the server side of a loopback connection sees its peer's close, not its data") {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(listener, 4) == 0);
  const int server_port = local_port(listener);

  int client = socket(AF_INET, SOCK_STREAM, 0);
  addr.sin_port = htons(uint16_t(server_port));
  REQUIRE(connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  int accepted = accept(listener, nullptr, nullptr);
  REQUIRE(accepted >= 0);

  CHECK_FALSE(peer_closed(accepted));
  // A pipelined request is data, not a hang-up (and peeking leaves it for the reader).
  REQUIRE(write(client, "GET", 3) == 3);
  CHECK_FALSE(peer_closed(accepted));
  char buf[3];
  CHECK(read(accepted, buf, 3) == 3);

  close(client);
  CHECK(peer_closed(accepted));
  CHECK_FALSE(peer_closed(-1));
  close(accepted);
  close(listener);
}
