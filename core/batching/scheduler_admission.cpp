// Admitting requests into the running set against the KV budget, and ending them.
#include <optional>
#include <string>
#include <vector>

#include "batching/failure_log.hpp"
#include "batching/running_sequence.hpp"
#include "common/error.hpp"
#include "models/llama_model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd::batching {
namespace {

uint64_t budget_rows(SharedEngine& engines) {
  const ServerConfig& s = engines.config().server;
  if (s.kv_budget > 0) return static_cast<uint64_t>(s.kv_budget);
  return static_cast<uint64_t>(std::max(s.max_sequences, 1)) * engines.engine().context_length();
}

}  // namespace

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
  // Cancelled while it queued: it ends here, holding nothing. (Let in to end at its first
  // step, it would hold KV rows past the budget, and the pool would grow for them.) Started,
  // then done, as every job that is not refused: the HTTP side waits for both.
  if (job->cancelled) {
    job->prefilled = true;
    RequestEvent started;
    started.kind = RequestEvent::Kind::started;
    job->emit(std::move(started));
    RequestEvent end;
    end.kind = RequestEvent::Kind::done;
    auto result = std::make_shared<GenerationResult>();
    result->stop_reason = "cancelled";
    end.result = std::move(result);
    job->emit(std::move(end));
    return true;
  }
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
    if (!kv().fits(rows)) {
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
    run->batch_verifier =
        std::make_unique<BatchVerifier>(engine.target(), rows, engine.invariant_rows(),
                                        engines_.config().server.prefix_cache, r.prefix_partition);
    SequenceParts parts;
    parts.tokenizer = &engine.tokenizer();
    parts.verifier = run->batch_verifier.get();
    parts.proposer = strategy.proposer.get();
    parts.proposer_sequence = run->proposer.get();
    parts.rule = strategy.rule.get();
    parts.adaptive = run->adaptive.get();
    parts.rng = run->rng.get();
    parts.target_path = engines_.config().target.model;
    Job* target = job.get();             // the running sequence holds the job, so it outlives these
    const Running* running = run.get();  // its sequence emits only once it is set
    run->sequence = std::make_unique<Sequence>(parts, prompt, r.sampling, r.max_tokens,
                                               [target, running](const std::string& text) {
                                                 RequestEvent e;
                                                 e.kind = RequestEvent::Kind::text;
                                                 e.text = text;
                                                 e.tokens = running->sequence->generated();
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
  } catch (const UsageError& e) {  // a plugin refusing what the request asks of it, a grammar
    refusal.emplace(usage_refusal(e, r));
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

}  // namespace specd::batching
