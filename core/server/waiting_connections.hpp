// The connections that wait for a request, by client address: from their accept, and again
// from the end of each answer (keep-alive), until their next request has arrived whole. A
// client that holds many of them (slow or idle) loses its own oldest first once it passes
// [server] max_waiting_per_client, so that one address cannot hold every connection slot
// while another's probe or request still gets through. (How long one may wait is the
// listener's read deadline, [server] request_timeout_s.)
//
// Thread rules: every member may be called from any thread (one mutex).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace specd::server {

class WaitingConnections {
 public:
  // 0: no cap.
  explicit WaitingConnections(int max_per_address) : max_(max_per_address) {}

  // Connection `id` from `address` starts waiting (again: a call for one already waiting
  // moves it to the back). Returns the connections of that address now beyond the cap, the
  // longest waiting first, which the caller closes; they are no longer counted.
  std::vector<uint64_t> waiting(const std::string& address, uint64_t id);
  // It stops waiting: its request has arrived, or it closed. Unknown ids are ignored.
  void done(uint64_t id);

  size_t count(const std::string& address) const;
  uint64_t cut_total() const;

 private:
  void forget(uint64_t id);  // with mutex_ held

  int max_;
  mutable std::mutex mutex_;
  std::map<std::string, std::list<uint64_t>> by_address_;  // oldest first
  struct Place {
    std::string address;
    std::list<uint64_t>::iterator at;
  };
  std::unordered_map<uint64_t, Place> places_;
  uint64_t cut_total_ = 0;
};

}  // namespace specd::server
