#include "server/peer_socket.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace specd::server {
namespace {

// The numeric address and port of a socket address; false for a non-IP family.
bool address_of(const sockaddr_storage& a, std::string& host, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    port = ntohs(in.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    port = ntohs(in6.sin6_port);
  } else {
    return false;
  }
  host = text;
  return true;
}

}  // namespace

std::vector<ConnectionSocket> connection_sockets(int local_port) {
  std::vector<ConnectionSocket> out;
  if (local_port <= 0) return out;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return out;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (getsockname(int(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
    if (getpeername(int(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;
    std::string local_host;
    ConnectionSocket c;
    int lport = 0;
    if (!address_of(local, local_host, lport) || !address_of(peer, c.peer, c.peer_port)) continue;
    if (lport != local_port) continue;
    c.fd = int(fd);
    out.push_back(std::move(c));
  }
  closedir(dir);
  return out;
}

bool is_connection(int fd, const std::string& peer, int peer_port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return false;
  std::string host;
  int port = 0;
  return address_of(a, host, port) && host == peer && port == peer_port;
}

int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port) {
  if (remote_port <= 0) return -1;
  for (const ConnectionSocket& c : connection_sockets(local_port))
    if (c.peer_port == remote_port && c.peer == remote_addr) return c.fd;
  return -1;
}

bool peer_closed(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, short(POLLIN | POLLRDHUP), 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) return true;
  if (!(p.revents & POLLIN)) return false;
  char byte;
  ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // end of stream: the client closed
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

void close_after_refusal(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  char buffer[16384];
  for (size_t dropped = 0; dropped < (size_t{1} << 20);) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n <= 0) break;
    dropped += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_RD);
}

}  // namespace specd::server
