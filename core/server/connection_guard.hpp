// Slow and piled-up connections, cut before they hold the HTTP pool: cpp-httplib 0.11 reads a
// request with a timeout per read but none for the whole request, so a client that sends a
// header line every few seconds holds a handler thread for as long as it likes, and enough
// of them lock every client (and /health) out.
//
// A connection is "waiting" while no handler runs for it: from its accept, and again from the
// end of each response (keep-alive). The guard sweeps the server's accepted sockets a few
// times a second (found by port, as peer_socket.hpp does) and shuts down
//   - a waiting connection older than request_timeout_s (its request has not arrived whole);
//   - the oldest waiting connections of an address beyond max_waiting_per_client, so that a
//     client opening many slow connections loses its own oldest first, and a probe or a real
//     request from the same address still gets through.
// A connection whose handler runs (a generation, a stream) is never cut by the guard, nor is
// one whose whole request head already waits unread in its socket buffer (it waits for a
// free handler thread: the delay is the server's, as in a burst through a proxy).
//
// Thread rules: busy() and idle() are called from handler threads; sweep() from the guard's
// own thread (start/stop), or directly in tests.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace specd::server {

class ConnectionGuard {
 public:
  using Clock = std::chrono::steady_clock;

  ConnectionGuard(double request_timeout_s, int max_waiting_per_client)
      : timeout_(request_timeout_s), max_waiting_(max_waiting_per_client) {}
  ~ConnectionGuard() { stop(); }

  // A handler starts for the connection from peer:port (its request has arrived).
  void busy(const std::string& peer, int port);
  // Its response has been written: the connection waits for its next request.
  void idle(const std::string& peer, int port);

  // Cuts what must be cut among the connections accepted on `local_port` at `now`; returns
  // how many were cut.
  size_t sweep(int local_port, Clock::time_point now);
  uint64_t cut_total() const { return cut_total_; }

  // Sweeps every 250 ms on a thread of its own until stop().
  void start(int local_port);
  void stop();

 private:
  struct Entry {
    Clock::time_point waiting_since;
    int busy = 0;
    bool seen = true;
    bool cut = false;  // shut down, not yet closed by the library
  };
  using Key = std::pair<std::string, int>;

  std::chrono::duration<double> timeout_;
  int max_waiting_;
  std::mutex mutex_;
  std::map<Key, Entry> connections_;
  std::atomic<uint64_t> cut_total_{0};
  std::thread thread_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace specd::server
