// The continuous-batching scheduler: one worker thread runs every admitted request's
// sequence over the one shared target. Each step it
//
//   1. runs the functions given to run_exclusive (they see the target between steps);
//   2. admits waiting requests in order while fewer than [server] max_sequences run and the
//      KV budget holds their reservation (a request that does not fit yet waits; the budget
//      also holds the verify sessions' caches, kv_budget());
//   3. gives each running sequence either its next prefill chunk or a round (its proposer
//      drafts; its rows are the root and the draft tree) and runs them all as ONE
//      LlamaModel::forward_batch;
//   4. then, per sequence: accept, commit, emit (a text event), and ends the finished and
//      cancelled ones (a done event), freeing their KV and returning their proposer.
//
// It takes requests already checked and encoded by the layer above (GenerationRequest) and
// answers what it refuses with a typed Refusal; it knows nothing of HTTP or its formats.
//
// A request's output does not depend on what shares its steps: each sequence's rows are
// batch invariant (forward_batch) and its draws come from its own generator. Requests with
// different strategy choices share the batch (SharedEngine strategies).
//
// Thread rules: submit(), cancel flags, queued(), busy() and run_exclusive() may be called
// from any thread; a job's events are pushed on the worker thread (request_events.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "batching/generation_request.hpp"
#include "batching/kv_budget.hpp"
#include "batching/refusal.hpp"
#include "batching/request_events.hpp"
#include "batching/shared_engine.hpp"
#include "batching/step_totals.hpp"
#include "engine/generation_stats.hpp"
#include "engine/step_cost.hpp"

namespace specd {
class AdaptiveK;
}

namespace specd::batching {

struct Job {
  GenerationRequest request;

  // Worker → submitter: started or refused, then its logprobs, texts and its end
  // (RequestEvent, tagged with `choice`). A failure mid-run is invalid_request for what the
  // engine refused, internal_failure for a runtime failure.
  std::shared_ptr<EventSink> events;
  size_t choice = 0;  // which of one request's jobs (n choices share a sink)
  // The worker's: tags the event with `choice` and pushes it.
  void emit(RequestEvent event) {
    event.choice = choice;
    if (events) events->push(std::move(event));
  }

  std::atomic<bool> cancelled{false};  // set by the handler when its client went away
  // Set (before `cancelled`) when the SIGTERM drain deadline cancels it: its answer is then
  // an error (docs/SERVER.md), not a finished completion.
  std::atomic<bool> shut_down{false};
  // Another choice of the same request (n > 1) whose prefill this one waits for, so that it
  // takes the prompt's blocks from the prefix cache instead of prefilling them too.
  std::shared_ptr<Job> wait_for_prefill;
  std::atomic<bool> prefilled{false};  // set by the scheduler: the prompt is in the KV cache
  std::string proposer, rule;          // what ran it (set before its started event)
  // The scheduler's: since when the job waits for KV rows that only verify sessions hold.
  std::optional<std::chrono::steady_clock::time_point> blocked_since;
};

class Scheduler {
 public:
  // max_sequences and the KV budget come from the engines' configuration ([server]). The
  // engine is not touched here: it loads at the first job or run_exclusive that needs it.
  Scheduler(SharedEngine& engines, int queue_limit);
  ~Scheduler();  // drains

  // Queues a job; false when queue_limit jobs already wait (the caller answers 503), or
  // the scheduler is draining. `limited` false: a job of the server's own (its self-test at
  // load), not held to queue_limit.
  bool submit(std::shared_ptr<Job> job, bool limited = true);
  // Stops taking jobs, runs those queued and running to their end, and joins the worker.
  void drain();
  size_t queued() const;
  // The engine its sequences run on (what SharedEngine allows on the worker: run_exclusive).
  SharedEngine& engines() { return engines_; }
  bool busy() const { return running_ > 0; }
  size_t running() const { return running_; }
  // The step counters so far (for /metrics). Any thread.
  StepTotals steps() const;
  // Runs fn on the worker between two steps (no sequence's pass is in flight, so fn may use
  // the target model, SharedEngine::target(), alone) and returns once it has run, rethrowing
  // what it threw. Called on the worker itself, or after drain(), it runs fn at once.
  void run_exclusive(std::function<void()> fn);
  // The KV budget the running sequences reserve from, for other holders of KV rows on the
  // target (verify sessions) to reserve from too. Only on the worker (run_exclusive); sized
  // from the loaded engine at first use.
  KvBudget& kv_budget() { return kv(); }
  // Called on the worker while the first waiting job does not fit in the KV budget and no
  // sequence runs (so only other holders keep it out): may free idle holders. Call before
  // submitting jobs.
  void set_reclaim(std::function<void()> fn);
  // Times the target's passes for the step plan now when the server's own configuration asks
  // for k = "auto", so that the first such request does not wait for it (on a 2-core CPU it
  // takes seconds for a 1.5 B target). Otherwise, or for a request that asks for k = "auto"
  // on a server configured with a fixed k, the passes are timed at the first step that plans.
  // The worker's: call it from run_exclusive.
  void prepare_step_plan();
  // Replaces the step plan's pass-time curve with `t` (calibrated), as if timed here: a
  // calibration kept from an earlier run on the same machine, or a test's known curve. The
  // steps then correct it as they would a timed one. The worker's: call it from
  // run_exclusive.
  void set_pass_time(const PassTime& t) { pass_time_ = t; }

 private:
  struct Running;
  void work();
  bool admit(std::shared_ptr<Job>& job);  // false: it does not fit yet
  void step();
  // The target pool's blocks into the gauges (steps()): after every step, also one that
  // ended early because every sequence in it finished or failed, so that blocks a cancelled
  // sequence gave back show as free at once.
  void record_kv();
  // Marks the sequences whose costly round work sits this step out (round_share.hpp).
  void share_costly_rounds();
  // Which prefilling sequences put their next chunk in this step ([server] max_prefill_rows):
  // the earliest admitted first, whole chunks, at least one; the others wait (Running::waits).
  void choose_prefill_chunks();
  // k = "auto": every planned sequence's k for this step (AdaptiveK::set_plan).
  void plan_drafts();
  // k = "auto": the estimates of the running sequence of `strategy` that has seen the most
  // rounds, or null.
  const AdaptiveK* most_experienced(const Strategy& strategy) const;
  void calibrate_pass_time();
  void finish(Running& r, const Refusal* failure);
  void run_exclusive_tasks();
  KvBudget& kv();  // the worker's: sized from the loaded engine at first use

  SharedEngine& engines_;
  const size_t queue_limit_;
  const size_t max_sequences_;
  std::optional<KvBudget> kv_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::deque<std::function<void()>> exclusive_;
  std::function<void()> reclaim_;
  bool stopping_ = false;
  std::atomic<size_t> running_{0};
  std::list<std::unique_ptr<Running>> active_;  // the worker's alone
  // The target pass's time by its rows (k = "auto": the step plan, step_planner.hpp);
  // calibrated by prepare_step_plan() or at the first step that plans.
  PassTime pass_time_;
  double last_pass_s_ = 0;    // the last step's target pass (worker only)
  bool worker_done_ = false;  // under mutex_: the worker has returned
  mutable std::mutex steps_mutex_;
  StepTotals steps_;  // under steps_mutex_
  std::thread worker_;
};

}  // namespace specd::batching
