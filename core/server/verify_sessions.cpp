#include "server/verify_sessions.hpp"

#include <cstdio>
#include <random>

#include "server/request.hpp"

namespace specd::server {
namespace {

using Clock = std::chrono::steady_clock;

// 128 random bits as 32 hex digits: not guessable from another session's id.
std::string new_id() {
  static std::random_device device;
  std::string id;
  for (int i = 0; i < 4; ++i) {
    char part[9];
    std::snprintf(part, sizeof(part), "%08x", static_cast<unsigned>(device()));
    id += part;
  }
  return id;
}

}  // namespace

VerifySessions::VerifySessions(size_t max_sessions, double idle_s)
    : max_sessions_(max_sessions), idle_(idle_s) {}

std::string VerifySessions::open(LlamaModel& model, uint32_t context) {
  expire();
  if (sessions_.size() >= max_sessions_)
    throw RequestError(503, "",
                       "too many verify sessions: " + std::to_string(max_sessions_) +
                           " are open ([server] verify_sessions); close one or retry later",
                       "too_many_sessions");
  std::string id = new_id();
  VerifySession& s = sessions_[id];
  try {
    s.verifier = make_target_verifier(model, context);
  } catch (...) {
    sessions_.erase(id);
    throw;
  }
  s.last_used = Clock::now();
  return id;
}

VerifySession& VerifySessions::get(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end())
    throw RequestError(404, "session",
                       "'session': no verify session '" + id +
                           "' (never opened, closed, or freed after " +
                           std::to_string(static_cast<int>(idle_.count())) + " s idle)",
                       "unknown_session");
  it->second.last_used = Clock::now();
  return it->second;
}

bool VerifySessions::close(const std::string& id) {
  return sessions_.erase(id) > 0;
}

size_t VerifySessions::expire() {
  const auto now = Clock::now();
  size_t freed = 0;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second.last_used > idle_) {
      it = sessions_.erase(it);
      ++freed;
    } else {
      ++it;
    }
  }
  return freed;
}

}  // namespace specd::server
