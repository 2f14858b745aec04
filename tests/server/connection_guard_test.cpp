// The connection guard on real sockets of this process: waiting connections beyond the
// per-address cap are cut oldest first, those past request_timeout_s are cut, a connection
// whose handler runs is never cut, and idle() restarts a connection's clock.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "server/connection_guard.hpp"

using specd::server::ConnectionGuard;

namespace {

struct Loopback {
  int listener = -1;
  int port = 0;
  std::vector<int> clients, accepted;
  std::vector<int> client_ports;

  explicit Loopback(int n) {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(listener, 64) == 0);
    socklen_t len = sizeof a;
    getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    for (int i = 0; i < n; ++i) {
      const int c = socket(AF_INET, SOCK_STREAM, 0);
      REQUIRE(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
      sockaddr_in local{};
      socklen_t l = sizeof local;
      getsockname(c, reinterpret_cast<sockaddr*>(&local), &l);
      clients.push_back(c);
      client_ports.push_back(ntohs(local.sin_port));
      accepted.push_back(accept(listener, nullptr, nullptr));
      REQUIRE(accepted.back() >= 0);
    }
  }
  ~Loopback() {
    for (int fd : clients) close(fd);
    for (int fd : accepted) close(fd);
    close(listener);
  }
  // The client's end sees the server's side shut down.
  bool cut(size_t i) const {
    pollfd p{clients[i], POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    char b;
    return recv(clients[i], &b, 1, MSG_DONTWAIT) == 0;
  }
  size_t cut_count() const {
    size_t n = 0;
    for (size_t i = 0; i < clients.size(); ++i) n += cut(i);
    return n;
  }
};

}  // namespace

TEST_CASE("the guard cuts waiting connections beyond the cap, then those past the timeout") {
  Loopback net(12);
  ConnectionGuard guard(10, 8);
  const auto t0 = ConnectionGuard::Clock::now();
  const auto past = t0 - std::chrono::seconds(20);  // the sweep that first sees them
  guard.busy("127.0.0.1", net.client_ports[0]);     // a handler runs for client 0
  CHECK(guard.sweep(net.port, past) == 3);          // 11 waiting, 8 allowed
  CHECK(net.cut_count() == 3);
  CHECK_FALSE(net.cut(0));
  size_t j = 1;  // a client still connected: its response just ended, its clock restarts
  while (net.cut(j)) ++j;
  guard.idle("127.0.0.1", net.client_ports[j]);
  // Past the timeout: every waiting connection but the one whose clock restarted.
  CHECK(guard.sweep(net.port, t0 + std::chrono::seconds(5)) == 7);
  CHECK(net.cut_count() == 10);
  CHECK_FALSE(net.cut(0));
  CHECK_FALSE(net.cut(j));
  CHECK(guard.cut_total() == 10);
  // The busy one survives any wait; once idle again, it has request_timeout_s.
  CHECK(guard.sweep(net.port, t0 + std::chrono::hours(1)) == 1);  // client j
  CHECK_FALSE(net.cut(0));
  guard.idle("127.0.0.1", net.client_ports[0]);
  CHECK(guard.sweep(net.port, ConnectionGuard::Clock::now()) == 0);
  CHECK(guard.sweep(net.port, ConnectionGuard::Clock::now() + std::chrono::seconds(11)) == 1);
  CHECK(net.cut_count() == 12);
}

TEST_CASE("a request sent whole and waiting for a thread is never cut; a partial one is") {
  Loopback net(3);
  ConnectionGuard guard(10, 1);
  const auto t0 = ConnectionGuard::Clock::now();
  const std::string head = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(send(net.clients[0], head.data(), head.size(), 0) == ssize_t(head.size()));
  REQUIRE(send(net.clients[1], head.data(), 20, 0) == 20);  // a head cut short
  CHECK(guard.sweep(net.port, t0) == 1);                    // two without a whole head, one allowed
  CHECK(guard.sweep(net.port, t0 + std::chrono::seconds(11)) == 1);
  CHECK_FALSE(net.cut(0));  // its request waits unread: the server is the slow one
  CHECK(net.cut(1));
  CHECK(net.cut(2));
}

TEST_CASE("without a cap only the timeout cuts, and other ports are never touched") {
  Loopback net(20);
  Loopback other(2);
  ConnectionGuard guard(10, 0);
  const auto t0 = ConnectionGuard::Clock::now();
  CHECK(guard.sweep(net.port, t0) == 0);
  CHECK(guard.sweep(net.port, t0 + std::chrono::seconds(11)) == 20);
  CHECK(other.cut_count() == 0);
}
