#include "server/verify_sessions.hpp"

#include <algorithm>
#include <cstdio>
#include <random>

#include "models/llama_model.hpp"
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

VerifySessions::VerifySessions(size_t max_sessions, double idle_s, batching::KvBudget& kv)
    : max_sessions_(max_sessions), idle_(idle_s), kv_(kv) {}

VerifySessions::~VerifySessions() {
  for (auto it = sessions_.begin(); it != sessions_.end();) it = erase(it);
}

VerifySessions::Map::iterator VerifySessions::erase(Map::iterator it) {
  kv_.release(it->second.reserved);
  return sessions_.erase(it);
}

std::string VerifySessions::open(LlamaModel& model, uint32_t context) {
  expire();
  if (sessions_.size() >= max_sessions_)
    throw RequestError(503, "",
                       "too many verify sessions: " + std::to_string(max_sessions_) +
                           " are open ([server] verify_sessions); close one or retry later",
                       "too_many_sessions");
  // The rows the target verifier's cache will hold (it is allocated whole, now).
  const uint32_t model_ctx = static_cast<uint32_t>(model.info().n_ctx);
  const uint32_t rows = context == 0 ? model_ctx : std::min(context, model_ctx);
  if (!kv_.fits(rows))
    throw RequestError(503, "",
                       "a verify session's KV cache needs " + std::to_string(rows) +
                           " rows and the server's KV budget ([server] kv_budget) has " +
                           std::to_string(kv_.budget() - std::min(kv_.used(), kv_.budget())) +
                           " of " + std::to_string(kv_.budget()) +
                           " free (running sequences and open sessions hold the rest); close a "
                           "session or retry later",
                       "kv_budget_full");
  std::string id = new_id();
  VerifySession& s = sessions_[id];
  try {
    s.verifier = make_target_verifier(model, context);
  } catch (...) {
    sessions_.erase(id);
    throw;
  }
  s.reserved = rows;
  kv_.take(rows);
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
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return false;
  erase(it);
  return true;
}

size_t VerifySessions::free_idle(std::chrono::duration<double> idle) {
  const auto now = Clock::now();
  size_t freed = 0;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second.last_used > idle) {
      it = erase(it);
      ++freed;
    } else {
      ++it;
    }
  }
  return freed;
}

}  // namespace specd::server
