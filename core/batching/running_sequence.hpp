// The scheduler's record of one admitted request (Scheduler::Running), shared by the files
// that make up the scheduler: scheduler.cpp (the worker and its steps),
// scheduler_admission.cpp (admitting and ending requests, the KV budget),
// scheduler_plan.cpp (prefill chunks and draft lengths of a step). Not for other users.
#pragma once

#include <cstdint>
#include <memory>

#include "batching/scheduler.hpp"
#include "engine/adaptive_k.hpp"
#include "engine/batch_verifier.hpp"
#include "engine/proposer.hpp"
#include "engine/sequence.hpp"
#include "plugin/host_services.hpp"

namespace specd::batching {

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
  bool prefill = false;       // its rows in the pass are a prefill chunk
  bool waits = false;         // prefilling, but this step's prefill rows are spent
  bool held = false;          // its round work is costly: it sits this step out (round_share)
  double round_s = 0;         // its rounds' work on the worker after the pass, smoothed
  uint64_t waited = 0;        // steps it has been held since it last took part
  ProposeCall call;           // this step's drafting (capacity 0: none)
  uint32_t proposer_lag = 0;  // its proposer's catch-up this step (tokens since it last drafted)
  uint32_t plain_steps = 0;   // k = "auto": steps in a row the plan kept it plain
  double draft_share = 0;     // its share of its strategy's propose time this step
};

}  // namespace specd::batching
