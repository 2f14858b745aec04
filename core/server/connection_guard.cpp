#include "server/connection_guard.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "server/peer_socket.hpp"

namespace specd::server {
namespace {

// Whether a whole request head already waits in the socket's receive buffer, unread: the
// client has sent its request and only waits for a free handler thread (a burst from a proxy,
// say), so the delay is the server's and the connection is left alone. A slow client's
// buffer holds part of a head (still queued), or nothing (a thread is reading it).
bool request_waits_unread(int fd) {
  char buf[8192];
  const ssize_t n = recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
  if (n <= 0) return false;
  if (size_t(n) == sizeof buf) return true;  // more than a head's worth sent: not dribbling
  return memmem(buf, size_t(n), "\r\n\r\n", 4) != nullptr;
}

}  // namespace

void ConnectionGuard::busy(const std::string& peer, int port) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, added] = connections_.try_emplace({peer, port});
  if (added || it->second.cut) it->second = Entry{Clock::now()};  // a new connection
  ++it->second.busy;
}

void ConnectionGuard::idle(const std::string& peer, int port) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry& e = connections_[{peer, port}];
  e.busy = std::max(0, e.busy - 1);
  e.waiting_since = Clock::now();
}

size_t ConnectionGuard::sweep(int local_port, Clock::time_point now) {
  const std::vector<ConnectionSocket> sockets = connection_sockets(local_port);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [key, e] : connections_) e.seen = false;
  struct Waiting {
    Clock::time_point since;
    const ConnectionSocket* socket;
  };
  std::map<std::string, std::vector<Waiting>> waiting;  // by peer address
  for (const ConnectionSocket& s : sockets) {
    auto [it, added] = connections_.try_emplace({s.peer, s.peer_port});
    if (added) it->second.waiting_since = now;
    it->second.seen = true;
    if (it->second.busy == 0 && !it->second.cut && !request_waits_unread(s.fd))
      waiting[s.peer].push_back({it->second.waiting_since, &s});
  }
  // Closed connections are forgotten (a running handler keeps its socket open: kept anyway).
  for (auto it = connections_.begin(); it != connections_.end();)
    it = !it->second.seen && it->second.busy == 0 ? connections_.erase(it) : std::next(it);

  size_t cut = 0;
  auto cut_one = [&](const ConnectionSocket& s) {
    // The snapshot may be stale: act only on the same connection.
    if (!is_connection(s.fd, s.peer, s.peer_port)) return;
    shutdown(s.fd, SHUT_RDWR);  // the reading thread sees the end and closes it
    connections_[{s.peer, s.peer_port}].cut = true;
    ++cut;
  };
  for (auto& [peer, list] : waiting) {
    std::sort(list.begin(), list.end(),
              [](const Waiting& a, const Waiting& b) { return a.since < b.since; });
    size_t over = max_waiting_ > 0 && list.size() > size_t(max_waiting_)
                      ? list.size() - size_t(max_waiting_)
                      : 0;
    for (size_t i = 0; i < list.size(); ++i)
      if (i < over || now - list[i].since > timeout_) cut_one(*list[i].socket);
  }
  cut_total_ += cut;
  return cut;
}

void ConnectionGuard::start(int local_port) {
  stop();
  stopping_ = false;
  thread_ = std::thread([this, local_port] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::milliseconds(250));
      if (stopping_) break;
      lock.unlock();
      sweep(local_port, Clock::now());
      lock.lock();
    }
  });
}

void ConnectionGuard::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace specd::server
