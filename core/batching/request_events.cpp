#include "batching/request_events.hpp"

#include <utility>

namespace specd::batching {

void EventQueue::push(RequestEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  pushed_.notify_all();
}

bool EventQueue::take(std::vector<RequestEvent>& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!pushed_.wait_for(lock, timeout, [this] { return !events_.empty(); })) return false;
  for (RequestEvent& e : events_) out.push_back(std::move(e));
  events_.clear();
  return true;
}

}  // namespace specd::batching
