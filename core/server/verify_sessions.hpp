// The sequences that remote drafters verify on this server (POST /v1/verify): each session
// is the built-in target verifier (its own KV cache) over the server's target model, plus
// the last verified tree so that the next request's commit can be checked against it.
// Bounded in number ([server] verify_sessions) and by the scheduler's KV budget ([server]
// kv_budget): a session's cache rows are reserved there like a running sequence's, for as
// long as it is open. A session unused for [server] verify_idle_s is freed at the next
// sweep (every /v1/verify request); one unused for verify_yield_s is freed when a
// completion waits for the rows it holds, so idle sessions never starve completions.
//
// Thread rules: none inside. Every call runs on the scheduler's worker (run_exclusive),
// which also owns the model the sessions' caches live on.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "batching/kv_budget.hpp"
#include "engine/verifier.hpp"

namespace specd::server {

struct VerifySession {
  std::unique_ptr<Verifier> verifier;
  bool started = false;          // a sequence was begun (reset) and nothing failed since
  std::vector<int32_t> pending;  // the last verified rows' tokens: root, node 1..N
  std::vector<int32_t> parents;  // their parents: node i's parent id is parents[i - 1]
  std::chrono::steady_clock::time_point last_used;
  uint32_t reserved = 0;  // KV rows held against the budget (its cache's capacity)
};

class VerifySessions {
 public:
  // `kv`: the budget the sessions' caches are reserved from (the scheduler's), outliving
  // this; every open session's rows go back to it when it is freed, or at destruction.
  VerifySessions(size_t max_sessions, double idle_s, batching::KvBudget& kv);
  ~VerifySessions();
  VerifySessions(const VerifySessions&) = delete;
  VerifySessions& operator=(const VerifySessions&) = delete;

  // A new session with a fresh KV cache of `context` tokens (0 = the model's; at most the
  // model's) on `model`. Throws RequestError 503 when max_sessions are open (code
  // "too_many_sessions") or when its cache does not fit in what the budget has free
  // ("kv_budget_full"), after freeing idle ones.
  std::string open(LlamaModel& model, uint32_t context);
  // The session, marked used now. Throws RequestError 404 (param "session") when unknown
  // or expired.
  VerifySession& get(const std::string& id);
  // Frees it; false when there was none.
  bool close(const std::string& id);
  // Frees the sessions idle longer than idle_s; returns how many.
  size_t expire() { return free_idle(idle_); }
  // Frees the sessions idle longer than `idle` (a completion waits for their rows).
  size_t free_idle(std::chrono::duration<double> idle);
  size_t size() const { return sessions_.size(); }

 private:
  using Map = std::map<std::string, VerifySession>;
  Map::iterator erase(Map::iterator it);  // frees the session and its reservation

  size_t max_sessions_;
  std::chrono::duration<double> idle_;
  batching::KvBudget& kv_;
  Map sessions_;
};

}  // namespace specd::server
