#include "batching/scheduler.hpp"

#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "batching/failure_log.hpp"
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

// k = "auto": a sequence the step plan kept plain this many steps in a row drafts one token.
constexpr uint32_t kProbeGap = 32;

uint64_t budget_rows(SharedEngine& engines) {
  const ServerConfig& s = engines.config().server;
  if (s.kv_budget > 0) return static_cast<uint64_t>(s.kv_budget);
  return static_cast<uint64_t>(std::max(s.max_sequences, 1)) * engines.engine().context_length();
}

}  // namespace

// One admitted request: its sequence and what it runs with.
struct Scheduler::Running {
  std::shared_ptr<Job> job;
  Strategy* strategy = nullptr;
  std::unique_ptr<ProposerSequence> proposer;  // its state in the strategy's proposer
  std::unique_ptr<AdaptiveK> adaptive;
  std::unique_ptr<specd_rng> rng;
  std::unique_ptr<BatchVerifier> batch_verifier;  // its rows and KV cache; its Verifier
  std::unique_ptr<Sequence> sequence;
  uint32_t reserved = 0;  // KV rows held against the budget
  bool in_pass = false;
  bool prefill = false;      // its rows in the pass are a prefill chunk
  bool waits = false;        // prefilling, but this step's prefill rows are spent
  ProposeCall call;          // this step's drafting (capacity 0: none)
  uint32_t unseen = 0;       // its proposer's catch-up this step (tokens since it last drafted)
  uint32_t plain_steps = 0;  // k = "auto": steps in a row the plan kept it plain
  double draft_share = 0;    // its share of its strategy's propose time this step
};

Scheduler::Scheduler(SharedEngine& engines, int queue_limit)
    : engines_(engines),
      queue_limit_(static_cast<size_t>(queue_limit)),
      max_sequences_(static_cast<size_t>(std::max(engines.config().server.max_sequences, 1))),
      worker_([this] { work(); }) {}

Scheduler::~Scheduler() {
  drain();
}

bool Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || queue_.size() >= queue_limit_) return false;
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

KvBudget& Scheduler::kv() {
  // Reservations are counted in the target's KV blocks, and its pool holds the whole budget
  // from the start (as vLLM sizes its cache at startup): no admission or pass ever grows it.
  // On the CPU that is address space, backed as rows are first written.
  if (!kv_) {
    kv_.emplace(budget_rows(engines_), LlamaModel::kKvBlockRows);
    try {
      engines_.target().reserve_kv(static_cast<int64_t>(kv_->budget()));
    } catch (const Error& e) {
      const uint64_t rows = kv_->budget();
      kv_.reset();
      throw Error("the server's KV budget of " + std::to_string(rows) + " rows (" +
                  engines_.config().where("server.kv_budget") +
                  ", or max_sequences times the context when it is 0) does not fit: " + e.what());
    }
  }
  return *kv_;
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
    if (!active_.empty()) step();
    running_ = active_.size();
  }
}

const AdaptiveK* Scheduler::most_experienced(const Strategy& strategy) const {
  const AdaptiveK* best = nullptr;
  for (const auto& r : active_)
    if (r->strategy == &strategy && r->adaptive &&
        (!best || r->adaptive->rounds() > best->rounds()))
      best = r->adaptive.get();
  return best;
}

bool Scheduler::admit(std::shared_ptr<Job>& job) {
  const GenerationRequest& r = job->request;
  // A later choice of an n > 1 request waits for the first's prefill (not when cancelled).
  if (job->wait_for_prefill && !job->wait_for_prefill->prefilled && !job->cancelled) return false;
  auto run = std::make_unique<Running>();
  std::optional<Refusal> refusal;
  try {
    Engine& engine = engines_.engine();
    Strategy& strategy = engines_.strategy(r.strategy);
    engines_.check_sampling(strategy, r);
    const std::vector<int32_t>& prompt = r.prompt;
    // The layer above bounds the prompt (GenerationRequest); one the target cannot start
    // from is refused rather than run.
    if (prompt.empty() || prompt.size() >= engine.context_length())
      throw Refusal(Refusal::Kind::invalid_request, "prompt",
                    "the prompt has " + std::to_string(prompt.size()) +
                        " tokens; the target starts from 1 to " +
                        std::to_string(engine.context_length() - 1));
    const bool drafts = strategy.config.proposer.kind != "none";
    const uint32_t rows = kv().reservation(prompt.size(), r.max_tokens, drafts,
                                           engine.invariant_rows(), engine.context_length());
    // A reservation is at most the budget, so with nothing else holding rows it fits.
    // (A cancelled job is let in to end at its next step, not kept waiting for room.)
    if (!kv().fits(rows) && !job->cancelled) {
      // Nothing runs, so only /v1/verify sessions in use hold the rows (idle ones yield
      // them): wait at most [server] kv_wait_s, then answer.
      if (active_.empty()) {
        const auto now = std::chrono::steady_clock::now();
        if (!job->blocked_since) job->blocked_since = now;
        const double waited = std::chrono::duration<double>(now - *job->blocked_since).count();
        if (waited > engines_.config().server.kv_wait_s)
          throw Refusal(Refusal::Kind::retry_later, "",
                        "the KV budget is held by /v1/verify sessions in use; waited " +
                            std::to_string(static_cast<int>(waited)) +
                            " s ([server] kv_wait_s): retry later",
                        "kv_budget_full");
      }
      return false;
    }

    run->job = job;
    run->proposer = engines_.take_proposer(strategy);
    run->strategy = &strategy;  // from here on, errors give its proposer place back
    run->reserved = rows;
    kv().take(rows);
    if (strategy.k_auto) {
      if (!strategy.idle_adaptive.empty()) {
        run->adaptive = std::move(strategy.idle_adaptive.back());
        strategy.idle_adaptive.pop_back();
      } else if (const AdaptiveK* known = most_experienced(strategy)) {
        // No finished sequence's estimates to start from: a running one's of the same
        // strategy (the pair's acceptance), so that the plan need not learn it anew.
        run->adaptive = std::make_unique<AdaptiveK>(*known);
      } else {
        run->adaptive = std::make_unique<AdaptiveK>(AdaptiveKOptions{});
      }
    }
    // Each request draws from its own generator: its seed, else the configured one, so
    // what it samples never depends on the requests before or beside it.
    run->rng = std::make_unique<specd_rng>(r.seed ? *r.seed : engines_.config().engine.seed);
    run->batch_verifier = std::make_unique<BatchVerifier>(
        engine.target(), rows, engine.invariant_rows(), engines_.config().server.prefix_cache);
    SequenceParts parts;
    parts.tokenizer = &engine.tokenizer();
    parts.verifier = run->batch_verifier.get();
    parts.proposer = strategy.proposer.get();
    parts.proposer_sequence = run->proposer.get();
    parts.rule = strategy.rule.get();
    parts.adaptive = run->adaptive.get();
    parts.rng = run->rng.get();
    parts.target_path = engines_.config().target.model;
    Job* target = job.get();  // the running sequence holds the job, so it outlives these
    run->sequence = std::make_unique<Sequence>(parts, prompt, r.sampling, r.max_tokens,
                                               [target](const std::string& text) {
                                                 RequestEvent e;
                                                 e.kind = RequestEvent::Kind::text;
                                                 e.text = text;
                                                 target->emit(std::move(e));
                                               });
    if (r.logprobs >= 0)
      run->sequence->set_logprobs(r.logprobs, [target](const TokenLogprob& entry) {
        RequestEvent e;
        e.kind = RequestEvent::Kind::logprob;
        e.logprob = entry;
        target->emit(std::move(e));
      });
    run->sequence->start();
    if (!run->batch_verifier->prefilling())
      job->prefilled = true;  // nothing to prefill, or all cached
    std::lock_guard<std::mutex> lock(steps_mutex_);
    steps_.prompt_rows += prompt.size() - 1;
    steps_.prefix_hit_rows += run->batch_verifier->prefix_hit_rows();
  } catch (const Refusal& e) {
    refusal = e;
  } catch (const UsageError& e) {  // a plugin refusing what the request asks of it
    refusal.emplace(Refusal::Kind::invalid_request, "prompt", e.what());
  } catch (const std::exception& e) {
    log_request_failure(e.what());
    refusal.emplace(Refusal::Kind::internal_failure, "", e.what());
  }
  if (refusal) {
    if (run->strategy) {
      kv().release(run->reserved);
      // A proposer sequence that failed is not reused.
      const bool failed = refusal->kind == Refusal::Kind::internal_failure;
      engines_.give_back(*run->strategy, failed ? nullptr : std::move(run->proposer));
    }
    job->prefilled = true;
    RequestEvent e;
    e.kind = RequestEvent::Kind::refused;
    e.refusal = std::move(refusal);
    job->emit(std::move(e));
    return true;
  }
  job->proposer = run->strategy->proposer_name;
  job->rule = run->strategy->rule_name;
  RequestEvent started;
  started.kind = RequestEvent::Kind::started;
  job->emit(std::move(started));
  active_.push_back(std::move(run));
  return true;
}

void Scheduler::finish(Running& run, const Refusal* failure) {
  Job& job = *run.job;
  job.prefilled = true;  // choices waiting for it go on, prefilling what they must
  RequestEvent end;
  if (failure) {
    end.kind = RequestEvent::Kind::failed;
    end.refusal = *failure;
    job.emit(std::move(end));
    // A proposer that failed mid-round is not reused.
    engines_.give_back(*run.strategy, nullptr);
  } else {
    end.kind = RequestEvent::Kind::done;
    end.result = std::make_shared<const GenerationResult>(run.sequence->finish());
    job.emit(std::move(end));
    engines_.give_back(*run.strategy, std::move(run.proposer));
    if (run.adaptive) run.strategy->idle_adaptive.push_back(std::move(run.adaptive));
  }
  kv().release(run.reserved);
  run.sequence.reset();
  run.batch_verifier.reset();  // frees its KV cache now
}

void Scheduler::calibrate_pass_time() {
  // Passes of a chain of `rows` rows after a 32-row prefix, in a cache of its own: the row-wise
  // work of a step of that many rows (its attention over one context; the steps' own times
  // then scale the curve to what their contexts cost).
  LlamaModel& target = engines_.target();
  constexpr int32_t kPrefix = 32;
  const std::vector<uint32_t> rows = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
  auto cache = target.new_cache(kPrefix + static_cast<int32_t>(rows.back()));
  auto chain = [](int32_t n, int32_t first) {
    std::vector<int32_t> tokens(n, 1), positions(n), parents(n);
    for (int32_t i = 0; i < n; ++i) {
      positions[i] = first + i;
      parents[i] = i - 1;
    }
    return std::tuple{tokens, positions, parents};
  };
  {
    auto [t, p, q] = chain(kPrefix, 0);
    target.forward(*cache, t, p, q, nullptr, nullptr, kPrefix);
    std::vector<int32_t> all(kPrefix);
    for (int32_t i = 0; i < kPrefix; ++i) all[i] = i;
    target.commit(*cache, all);
  }
  std::vector<float> logits(static_cast<size_t>(rows.back()) * target.info().vocab_size);
  auto time_pass = [&](uint32_t m) {
    auto [t, p, q] = chain(static_cast<int32_t>(m), kPrefix);
    const auto t0 = Clock::now();
    target.forward(*cache, t, p, q, logits.data());
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    target.truncate(*cache, kPrefix);
    return s;
  };
  time_pass(1);  // a warm-up pass (caches, first touches)
  pass_time_.calibrate(rows, 3, time_pass);
  std::string line = "serve: the target's pass timed for k = \"auto\" (rows: ms):";
  for (uint32_t r : rows) {
    char item[48];
    std::snprintf(item, sizeof item, " %u: %.2f", r, pass_time_.time(r) * 1e3);
    line += item;
  }
  if (target.info().hybrid()) {
    // A rejected draft's replay (a hybrid target's recurrent state run again), timed three
    // times on the same cache: the plan's starting price of a restore.
    for (int i = 0; i < 3; ++i) {
      auto [t, p, q] = chain(4, cache->size());
      target.forward(*cache, t, p, q, logits.data());
      const int32_t root = 0;
      target.commit(*cache, std::span<const int32_t>(&root, 1));
    }
    char item[64];
    std::snprintf(item, sizeof item, "; a replay of one row %.2f ms",
                  target.replay_seconds() * 1e3);
    line += item;
  }
  log_message(LogLevel::info, line);
}

void Scheduler::prepare_step_plan() {
  const Config& c = engines_.config();
  if (c.proposer.plans_k() && !pass_time_.calibrated()) calibrate_pass_time();
}

void Scheduler::choose_prefill_chunks() {
  // A budget trades the later requests' first tokens and the decoding sequences' steady
  // steps for the earlier requests' first tokens (docs/SERVER.md, "Prefill budget").
  const uint64_t budget = static_cast<uint64_t>(engines_.config().server.max_prefill_rows);
  uint64_t taken = 0, adopted = 0;
  for (auto& r : active_) {
    Running& run = *r;
    run.waits = false;
    if (!run.batch_verifier->prefilling()) continue;
    // What a request ahead with the same start published since (one it waited behind).
    adopted += run.batch_verifier->take_published();
    if (!run.batch_verifier->prefilling()) {
      run.job->prefilled = true;
      continue;
    }
    const uint32_t rows = run.batch_verifier->next_chunk_rows();
    if (budget > 0 && taken > 0 && taken + rows > budget) {
      run.waits = true;
      continue;
    }
    taken += rows;
  }
  if (adopted) {
    std::lock_guard<std::mutex> lock(steps_mutex_);
    steps_.prefix_hit_rows += adopted;
  }
}

void Scheduler::plan_drafts() {
  bool planned = false;
  for (auto& r : active_) planned = planned || r->adaptive != nullptr;
  if (!planned) return;
  if (!pass_time_.calibrated()) calibrate_pass_time();
  std::vector<PlanSequence> seqs;
  std::vector<Running*> runs;
  std::vector<Proposer*> groups;
  std::vector<const DraftTime*> drafts;
  for (auto& r : active_) {
    Running& run = *r;
    if (run.sequence->done() || run.waits) continue;
    PlanSequence q;
    if (run.batch_verifier->prefilling()) {
      q.prefill = true;
      q.fixed_rows = run.batch_verifier->next_chunk_rows();
    } else {
      q.fixed_rows = 1;
      q.fixed_tokens = 1;
      const uint32_t room = run.sequence->draft_room();
      if (Proposer* p = run.strategy->proposer.get()) {
        auto g = std::find(groups.begin(), groups.end(), p);
        if (g == groups.end()) {
          groups.push_back(p);
          drafts.push_back(&run.strategy->draft_time);
          g = groups.end() - 1;
        }
        q.group = static_cast<int>(g - groups.begin());
        if (run.adaptive && run.sequence->stats().rounds == 0) {
          // Its first round stays plain: the request's first token waits for no draft (a
          // draft model's catch-up over the whole prompt, the drafted rows), as it waits for
          // none in plain decoding. Drafting starts from its second round.
        } else if (run.adaptive) {
          // Its expected tokens by k from its acceptance so far (a little optimistic, so that
          // a sequence whose estimates rest on few rounds still gets to draft).
          const uint32_t most = std::min<uint32_t>(AdaptiveKOptions{}.k_max, room);
          double before = 1;
          for (uint32_t j = 1; j <= most; ++j) {
            const double e = run.adaptive->expected_tokens(j, 0.5);
            q.gains.push_back(std::max(0.0, e - before));
            before = e;
          }
          // Its catch-up beyond one round's tokens (a sequence that stayed plain for a while,
          // or a prompt the proposer has not read) is paid once and then serves every later
          // round: charged to this step in full, it would keep a sequence that fell behind
          // from ever drafting again, its catch-up growing while it stays plain. So the plan
          // charges that part spread over the rounds left (at two tokens a round).
          const uint32_t unseen = run.sequence->unseen(), steady = most + 1;
          const uint32_t rounds_left = std::max<uint32_t>(1, (room + 1) / 2);
          q.catch_up = unseen <= steady
                           ? unseen
                           : steady + (unseen - steady + rounds_left - 1) / rounds_left;
        } else {
          // A fixed k: its rows, and its tokens at its acceptance so far.
          const GenerationStats& st = run.sequence->stats();
          const uint32_t k = std::min<uint32_t>(
              static_cast<uint32_t>(std::max(run.strategy->config.proposer.k, 0)), room);
          const double alpha = (st.accepted + 1.0) / (st.drafted + 2.0);
          q.fixed_draft = k;
          q.fixed_rows += k;
          q.fixed_tokens += alpha * k;
        }
      }
    }
    seqs.push_back(std::move(q));
    runs.push_back(&run);
  }
  const double restore = engines_.target().replay_seconds();
  const StepPlan plan = plan_step(seqs, pass_time_, drafts, restore);
  // The plan were every draft token accepted (made only when a probe is due): a sequence it
  // keeps plain would not draft whatever its acceptance, so probing that acceptance would
  // only cost (a draft model's catch-up over every token since it last drafted, for all
  // such sequences at once).
  std::optional<StepPlan> best_case;
  auto could_pay = [&](size_t i) {
    if (!best_case) {
      std::vector<PlanSequence> sure = seqs;
      for (PlanSequence& q : sure) std::fill(q.gains.begin(), q.gains.end(), 1.0);
      best_case = plan_step(sure, pass_time_, drafts, restore);
    }
    return best_case->k[i] > 0;
  };
  if (log_level() == LogLevel::debug) {
    uint32_t drafted = 0, prefill_rows = 0, decoding = 0;
    for (size_t i = 0; i < seqs.size(); ++i) {
      drafted += plan.k[i];
      prefill_rows += seqs[i].prefill ? seqs[i].fixed_rows : 0;
      decoding += seqs[i].prefill ? 0 : 1;
    }
    char line[200];
    std::snprintf(line, sizeof line,
                  "serve: step plan: %u decoding, %u prefill rows, %u drafted; %.2f tokens in "
                  "%.1f ms (plain %.1f ms; pass scale %.2f)",
                  decoding, prefill_rows, drafted, plan.tokens, plan.seconds * 1e3,
                  plan.plain_seconds * 1e3, pass_time_.scale());
    log_message(LogLevel::debug, line);
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    Running& run = *runs[i];
    if (!run.adaptive) continue;
    uint32_t k = plan.k[i];
    // A sequence the plan keeps plain drafts one token now and then (kProbeGap steps), so
    // that its acceptance and its proposer's cost stay measured as the batch changes, where
    // a better acceptance could make it draft.
    if (k == 0 && !seqs[i].gains.empty() && ++run.plain_steps >= kProbeGap && could_pay(i)) k = 1;
    if (k > 0) run.plain_steps = 0;
    run.adaptive->set_plan(k);
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
    const bool usage = dynamic_cast<const UsageError*>(&e) != nullptr;
    if (!usage) log_request_failure(e.what());
    const Refusal error = usage ? Refusal(Refusal::Kind::invalid_request, "prompt", e.what())
                                : Refusal(Refusal::Kind::internal_failure, "", e.what());
    finish(**it, &error);
    it = active_.erase(it);
  };
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
    if (run.waits) {  // its turn to prefill comes later
      ++it;
      continue;
    }
    try {
      if (run.job->cancelled) run.sequence->stop("cancelled");
      run.prefill = run.batch_verifier->prefilling();
      run.unseen = run.prefill ? 0 : run.sequence->unseen();
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
      catch_up += runs[i]->unseen;
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
  for (auto it = active_.begin(); it != active_.end();) {
    Running& run = **it;
    if (!run.in_pass) {
      ++it;
      continue;
    }
    try {
      if (!run.prefill) run.sequence->submit_round(run.call, run.draft_share);
      entries.push_back(run.batch_verifier->entry());
    } catch (const std::exception& e) {
      fail(it, e);
      continue;
    }
    ++it;
  }
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
  uint32_t rows = 0;
  for (const ForwardEntry& e : entries) rows += static_cast<uint32_t>(e.tokens.size());
  bool prefill = false;
  double rounds_s = 0;  // turning the rounds' rows into distributions, accepting, emitting
  for (auto it = active_.begin(); it != active_.end();) {
    Running& run = **it;
    if (!run.in_pass) {
      ++it;
      continue;
    }
    try {
      run.batch_verifier->pass_done();
      if (run.prefill) {
        if (!run.batch_verifier->prefilling()) run.job->prefilled = true;
        run.sequence->stats().prefill_s += pass_s;
        prefill = true;
      } else {
        const auto r0 = Clock::now();
        run.sequence->end_round(pass_s);
        rounds_s += std::chrono::duration<double>(Clock::now() - r0).count();
        if (run.sequence->done()) {
          finish(run, nullptr);
          it = active_.erase(it);
          continue;
        }
      }
    } catch (const std::exception& e) {
      fail(it, e);
      continue;
    }
    ++it;
  }
  // A step's cost by its rows keeps the plan's pass time current: the pass and the per-row
  // work after it. Steps with a prefill chunk are left out: a chunk's rows cost less each
  // than a round's (no logits, no rules), so they would make drafted rows look cheap.
  if (!prefill) pass_time_.observe(rows, pass_s + rounds_s);
  if (log_level() == LogLevel::debug) {  // what the step took, beside its plan's line
    char line[160];
    std::snprintf(line, sizeof line,
                  "serve: step done: %u rows in %.1f ms (drafting %.1f, pass %.1f, rounds %.1f)",
                  rows, std::chrono::duration<double>(Clock::now() - step_t0).count() * 1e3,
                  draft_s * 1e3, pass_s * 1e3, rounds_s * 1e3);
    log_message(LogLevel::debug, line);
  }

  uint32_t prefill_rows = 0;
  for (const ForwardEntry& e : entries)
    if (e.first_logit_row > 0) prefill_rows += static_cast<uint32_t>(e.tokens.size());
  const KvPool& pool = engines_.target().kv_pool();
  std::lock_guard<std::mutex> lock(steps_mutex_);
  steps_.kv_blocks = static_cast<uint64_t>(pool.blocks());
  steps_.kv_blocks_free = static_cast<uint64_t>(pool.free_blocks());
  steps_.kv_blocks_cached = static_cast<uint64_t>(pool.parked_blocks());
  steps_.kv_evictions = pool.evictions();
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
