// A step's plan: which prefilling sequences put a chunk in it, and (k = "auto") every
// planned sequence's draft length, from the timed pass curve (step_planner.hpp).
#include <chrono>
#include <map>
#include <tuple>
#include <vector>

#include "batching/running_sequence.hpp"
#include "batching/step_planner.hpp"
#include "common/log.hpp"
#include "models/llama_model.hpp"

namespace specd::batching {
namespace {

using Clock = std::chrono::steady_clock;

// k = "auto": a sequence the step plan kept plain this many steps in a row drafts one token.
constexpr uint32_t kProbeGap = 32;

}  // namespace

void Scheduler::calibrate_pass_time() {
  // Passes of a chain of `rows` rows after a 32-row prefix, in a cache of its own: the row-wise
  // work of a step of that many rows (its attention over one context; the steps' own times
  // then scale the curve to what their contexts cost). The tokens are spread over the
  // vocabulary: a mixture of experts' rows then go to as many experts as a step's distinct
  // tokens do, and a pass costs by the experts its rows wake, not by its rows alone.
  LlamaModel& target = engines_.target();
  constexpr int32_t kPrefix = 32;
  const std::vector<uint32_t> rows = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
  auto cache = target.new_cache(kPrefix + static_cast<int32_t>(rows.back()));
  const int64_t vocab = target.info().vocab_size;
  auto chain = [vocab](int32_t n, int32_t first) {
    std::vector<int32_t> tokens(n), positions(n), parents(n);
    for (int32_t i = 0; i < n; ++i) {
      // A prime stride: tokens spread over the vocabulary, no pattern a model could follow.
      tokens[i] = static_cast<int32_t>((static_cast<int64_t>(first + i) * 7919 + 1) % vocab);
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
    if (run.sequence->done() || run.waits || run.held) continue;
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
          const uint32_t lag = run.sequence->proposer_lag(), steady = most + 1;
          const uint32_t rounds_left = std::max<uint32_t>(1, (room + 1) / 2);
          q.catch_up =
              lag <= steady ? lag : steady + (lag - steady + rounds_left - 1) / rounds_left;
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

}  // namespace specd::batching
