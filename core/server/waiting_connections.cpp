#include "server/waiting_connections.hpp"

namespace specd::server {

std::vector<uint64_t> WaitingConnections::waiting(const std::string& address, uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  forget(id);
  std::list<uint64_t>& list = by_address_[address];
  places_[id] = Place{address, list.insert(list.end(), id)};
  std::vector<uint64_t> cut;
  while (max_ > 0 && list.size() > size_t(max_)) {
    cut.push_back(list.front());
    places_.erase(list.front());
    list.pop_front();
  }
  cut_total_ += cut.size();
  return cut;
}

void WaitingConnections::done(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  forget(id);
}

void WaitingConnections::forget(uint64_t id) {
  auto it = places_.find(id);
  if (it == places_.end()) return;
  auto list = by_address_.find(it->second.address);
  list->second.erase(it->second.at);
  if (list->second.empty()) by_address_.erase(list);
  places_.erase(it);
}

size_t WaitingConnections::count(const std::string& address) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_address_.find(address);
  return it == by_address_.end() ? 0 : it->second.size();
}

uint64_t WaitingConnections::cut_total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cut_total_;
}

}  // namespace specd::server
