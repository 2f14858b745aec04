#include "batching/scheduler.hpp"

#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "batching/failure_log.hpp"
#include "batching/round_share.hpp"
#include "batching/running_sequence.hpp"
#include "batching/step_planner.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "engine/adaptive_k.hpp"
#include "engine/batch_verifier.hpp"
#include "engine/proposer.hpp"
#include "engine/sequence.hpp"
#include "models/llama_model.hpp"
#include "plugin/host_services.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd::batching {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Scheduler::Scheduler(SharedEngine& engines, int queue_limit)
    : engines_(engines),
      queue_limit_(static_cast<size_t>(queue_limit)),
      max_sequences_(static_cast<size_t>(std::max(engines.config().server.max_sequences, 1))),
      worker_([this] { work(); }) {}

Scheduler::~Scheduler() {
  drain();
}

bool Scheduler::submit(std::shared_ptr<Job> job, bool limited) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || (limited && queue_.size() >= queue_limit_)) return false;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

size_t Scheduler::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void Scheduler::drain() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Scheduler::run_exclusive(std::function<void()> fn) {
  if (std::this_thread::get_id() == worker_.get_id()) {
    fn();
    return;
  }
  std::packaged_task<void()> task(std::move(fn));
  std::future<void> done = task.get_future();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (worker_done_) {
      lock.unlock();
      task();  // no worker left to race with
      done.get();
      return;
    }
    exclusive_.push_back([&task] { task(); });
  }
  wake_.notify_all();
  done.get();
}

void Scheduler::run_exclusive_tasks() {
  for (;;) {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (exclusive_.empty()) return;
      fn = std::move(exclusive_.front());
      exclusive_.pop_front();
    }
    fn();  // a packaged task: what it throws goes to its caller
  }
}

void Scheduler::set_reclaim(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  reclaim_ = std::move(fn);
}

void Scheduler::work() {
  // The first waiting job does not fit and no sequence runs: only other holders of the
  // budget (verify sessions) keep it out, and only run_exclusive tasks (closing them) or
  // reclaim_ (freeing idle ones) make room. Wait for those, a while at a time.
  bool blocked = false;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto ready = [&] {
        return !exclusive_.empty() || !active_.empty() ||
               (!blocked && (stopping_ || !queue_.empty()));
      };
      if (blocked)
        wake_.wait_for(lock, std::chrono::milliseconds(200), ready);
      else
        wake_.wait(lock, ready);
      if (stopping_ && queue_.empty() && exclusive_.empty() && active_.empty()) {
        worker_done_ = true;
        return;
      }
    }
    run_exclusive_tasks();
    if (blocked) {
      std::function<void()> reclaim;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        reclaim = reclaim_;
      }
      if (reclaim) reclaim();
    }
    blocked = false;
    while (active_.size() < max_sequences_) {
      std::shared_ptr<Job> job;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (queue_.empty()) break;
        job = queue_.front();
      }
      if (!admit(job)) {  // the first in line waits for KV; so do those behind it
        blocked = active_.empty();
        break;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.pop_front();
    }
    running_ = active_.size();
    if (!active_.empty()) {
      step();
      record_kv();
    }
    running_ = active_.size();
  }
}

void Scheduler::share_costly_rounds() {
  std::vector<RoundCost> costs;
  costs.reserve(active_.size());
  for (const auto& r : active_) costs.push_back({r->round_s, r->waited});
  const std::vector<bool> held = hold_costly_rounds(costs, last_pass_s_);
  size_t i = 0;
  for (auto& r : active_) {
    r->held = held[i++];
    r->waited = r->held ? r->waited + 1 : 0;
  }
}

void Scheduler::record_kv() {
  const KvPool& pool = engines_.target().kv_pool();
  std::lock_guard<std::mutex> lock(steps_mutex_);
  steps_.kv_blocks = static_cast<uint64_t>(pool.blocks());
  steps_.kv_block_rows = static_cast<uint64_t>(pool.block_rows());
  steps_.kv_blocks_free = static_cast<uint64_t>(pool.free_blocks());
  steps_.kv_blocks_cached = static_cast<uint64_t>(pool.parked_blocks());
  steps_.kv_evictions = pool.evictions();
  if (const KvPool* w = pool.window()) {
    steps_.kv_window_blocks = static_cast<uint64_t>(w->blocks());
    steps_.kv_window_blocks_used = static_cast<uint64_t>(w->used_blocks());
  }
}

StepTotals Scheduler::steps() const {
  std::lock_guard<std::mutex> lock(steps_mutex_);
  return steps_;
}

void Scheduler::step() {
  const auto step_t0 = Clock::now();
  double draft_s = 0;
  uint32_t drafting = 0;
  std::vector<ForwardEntry> entries;
  entries.reserve(active_.size());
  auto fail = [&](std::list<std::unique_ptr<Running>>::iterator& it, const std::exception& e) {
    const auto* usage = dynamic_cast<const UsageError*>(&e);
    if (!usage) log_request_failure(e.what());
    const Refusal error = usage ? usage_refusal(*usage, (*it)->job->request)
                                : Refusal(Refusal::Kind::internal_failure, "", e.what());
    finish(**it, &error);
    it = active_.erase(it);
  };
  // fn(run) on each sequence in this step's pass: one that throws ends with the error, one
  // for which fn returns false has been finished by it and leaves.
  auto each_in_pass = [&](auto fn) {
    for (auto it = active_.begin(); it != active_.end();) {
      if (!(*it)->in_pass) {
        ++it;
        continue;
      }
      try {
        if (!fn(**it)) {
          it = active_.erase(it);
          continue;
        }
      } catch (const std::exception& e) {
        fail(it, e);
        continue;
      }
      ++it;
    }
  };
  share_costly_rounds();
  choose_prefill_chunks();
  plan_drafts();
  // 1. Each sequence's round up to drafting (or its next prefill chunk).
  for (auto it = active_.begin(); it != active_.end();) {
    Running& run = **it;
    run.in_pass = false;
    run.call = ProposeCall{};
    // Cancelled before its first token: it ends now, not after the rest of its prefill (a
    // long prompt's chunks would only delay the others).
    if (run.job->cancelled && run.batch_verifier->prefilling()) {
      run.sequence->stop("cancelled");
      finish(run, nullptr);
      it = active_.erase(it);
      continue;
    }
    // Its turn to prefill comes later, or its costly round waits for its turn (a cancelled
    // one goes on, to end now).
    if (run.waits || (run.held && !run.job->cancelled)) {
      ++it;
      continue;
    }
    try {
      if (run.job->cancelled) run.sequence->stop("cancelled");
      run.prefill = run.batch_verifier->prefilling();
      run.proposer_lag = run.prefill ? 0 : run.sequence->proposer_lag();
      if (!run.prefill && (run.sequence->done() || !run.sequence->prepare_round(run.call))) {
        finish(run, nullptr);
        it = active_.erase(it);
        continue;
      }
      run.in_pass = true;
    } catch (const std::exception& e) {
      fail(it, e);
      continue;
    }
    ++it;
  }
  // 2. Drafting: one propose call per strategy for all its drafting sequences (a draft
  // model runs each draft step as one batched pass over them). Each sequence is charged its
  // share of the call's time by the nodes it got.
  std::map<Proposer*, std::vector<Running*>> groups;
  for (auto& r : active_)
    if (r->in_pass && r->call.capacity > 0) groups[r->strategy->proposer.get()].push_back(r.get());
  for (auto& [proposer, runs] : groups) {
    std::vector<ProposeCall> calls;
    for (Running* r : runs) calls.push_back(r->call);
    const auto d0 = Clock::now();
    std::string failed;
    try {
      proposer->propose(calls);
    } catch (const std::exception& e) {
      failed = e.what();
    }
    const double group_s = std::chrono::duration<double>(Clock::now() - d0).count();
    draft_s += group_s;
    drafting += static_cast<uint32_t>(runs.size());
    uint64_t nodes = 0;
    uint32_t longest = 0, catch_up = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
      nodes += calls[i].draft->n_nodes;
      longest = std::max(longest, calls[i].draft->n_nodes);
      catch_up += runs[i]->proposer_lag;
    }
    if (failed.empty())
      runs.front()->strategy->draft_time.observe(std::max<uint32_t>(longest, 1),
                                                 static_cast<uint32_t>(nodes) + catch_up, group_s);
    for (size_t i = 0; i < runs.size(); ++i) {
      runs[i]->call = calls[i];
      if (!failed.empty() && runs[i]->call.error.empty()) runs[i]->call.error = failed;
      runs[i]->draft_share =
          nodes > 0 ? group_s * calls[i].draft->n_nodes / double(nodes) : group_s / runs.size();
    }
  }
  // 3. Each sequence's rows for the pass: its round (root and draft) or its prefill chunk.
  each_in_pass([&](Running& run) {
    if (!run.prefill) run.sequence->submit_round(run.call, run.draft_share);
    entries.push_back(run.batch_verifier->entry());
    return true;
  });
  if (entries.empty()) return;
  const auto t0 = Clock::now();
  try {
    engines_.target().forward_batch(entries);
  } catch (const std::exception& e) {
    // A backend failure: every sequence in the pass ends with it.
    const Error error("target " + engines_.config().target.model + ": " + e.what());
    for (auto it = active_.begin(); it != active_.end();) {
      if ((*it)->in_pass)
        fail(it, error);
      else
        ++it;
    }
    return;
  }
  const double pass_s = std::chrono::duration<double>(Clock::now() - t0).count();
  last_pass_s_ = pass_s;
  uint32_t rows = 0;
  for (const ForwardEntry& e : entries) rows += static_cast<uint32_t>(e.tokens.size());
  bool prefill = false;
  uint64_t emitted = 0;  // tokens the rounds emitted (the debug line's, beside the plan's)
  double rounds_s = 0;   // turning the rounds' rows into distributions, accepting, emitting
  each_in_pass([&](Running& run) {
    run.batch_verifier->pass_done();
    if (run.prefill) {
      if (!run.batch_verifier->prefilling()) run.job->prefilled = true;
      run.sequence->stats().prefill_s += pass_s;
      prefill = true;
      return true;
    }
    const auto r0 = Clock::now();
    const size_t before = run.sequence->generated();
    run.sequence->end_round(pass_s);
    emitted += run.sequence->generated() - before;
    const double round_s = std::chrono::duration<double>(Clock::now() - r0).count();
    // Smoothed, so that one round slowed by the machine (a preempted thread) does not make a
    // sequence costly.
    run.round_s = run.round_s > 0 ? 0.5 * run.round_s + 0.5 * round_s : round_s;
    rounds_s += round_s;
    if (!run.sequence->done()) return true;
    finish(run, nullptr);
    return false;
  });
  // A step's cost by its rows keeps the plan's pass time current: the pass and the per-row
  // work after it. Steps with a prefill chunk are left out: a chunk's rows cost less each
  // than a round's (no logits, no rules), so they would make drafted rows look cheap.
  if (!prefill) pass_time_.observe(rows, pass_s + rounds_s);
  if (log_level() == LogLevel::debug) {  // what the step took, beside its plan's line
    char line[160];
    std::snprintf(line, sizeof line,
                  "serve: step done: %u rows, %llu tokens in %.1f ms (drafting %.1f, pass %.1f, "
                  "rounds %.1f)",
                  rows, static_cast<unsigned long long>(emitted),
                  std::chrono::duration<double>(Clock::now() - step_t0).count() * 1e3,
                  draft_s * 1e3, pass_s * 1e3, rounds_s * 1e3);
    log_message(LogLevel::debug, line);
  }

  uint32_t prefill_rows = 0;
  for (const ForwardEntry& e : entries)
    if (e.first_logit_row > 0) prefill_rows += static_cast<uint32_t>(e.tokens.size());
  std::lock_guard<std::mutex> lock(steps_mutex_);
  ++steps_.steps;
  steps_.rows += rows;
  steps_.prefill_rows += prefill_rows;
  steps_.drafted_sequences += drafting;
  steps_.seconds += std::chrono::duration<double>(Clock::now() - step_t0).count();
  steps_.draft_seconds += draft_s;
  steps_.pass_seconds += pass_s;
  steps_.rounds_seconds += rounds_s;
}

}  // namespace specd::batching
