// The request scheduler: a FIFO of requests and ONE worker thread that runs them one at a
// time through the engine (no batching: a continuous-batching scheduler replaces this
// component later behind the same submit/drain interface; see docs/SERVER.md).
//
// Thread rules: submit(), cancel flags and queued() may be called from any thread; a job's
// callbacks run on the worker thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/generation_stats.hpp"
#include "server/engine_cache.hpp"
#include "server/request.hpp"

namespace specd::server {

struct Job {
  CompletionRequest request;
  std::string prompt_text;  // the completion prompt, or the rendered chat
  int kv_budget = 0;        // tokens (prompt + max_tokens) allowed; 0 = no limit here

  // Worker → handler. `on_start` is called once before the first token, with nullptr when the
  // generation starts, else with the error that refused it (then nothing else follows).
  std::function<void(const RequestError*)> on_start;
  std::function<void(const std::string&)> on_text;
  // Called once at the end of a started job: the result, or an error (status 400 for a
  // request the engine refused, 500 for a runtime failure).
  std::function<void(const GenerationResult*, const RequestError* error)> on_done;

  std::atomic<bool> cancelled{false};  // set by the handler when its client went away
  std::string proposer, rule;          // what ran it (set before on_start)
};

class Scheduler {
 public:
  Scheduler(EngineCache& engines, int queue_limit);
  ~Scheduler();  // drains

  // Queues a job; false when queue_limit jobs already wait (the caller answers 503).
  bool submit(std::shared_ptr<Job> job);
  // Stops taking jobs, runs those queued, and joins the worker.
  void drain();
  size_t queued() const;
  // Runs `fn` on the worker between jobs (before the next queued one) and blocks the caller
  // until it has run; an exception from fn is rethrown here. For work that uses the
  // engines' models beside generation (/v1/verify). Throws Error once draining has begun.
  void run_exclusive(std::function<void()> fn);
  bool busy() const { return running_; }

 private:
  void work();
  void run(Job& job);

  EngineCache& engines_;
  const size_t queue_limit_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::deque<std::packaged_task<void()>> exclusive_;  // run_exclusive's, before any job
  bool stopping_ = false;
  std::atomic<bool> running_{false};
  std::thread worker_;
};

}  // namespace specd::server
