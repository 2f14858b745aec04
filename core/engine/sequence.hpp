// One sequence's generation, round by round (ARCHITECTURE.md, "The round"):
//
//   prepare_round: the draft's size (room left, k)          → a ProposeCall
//   (the caller drafts: Proposer::propose over one or many sequences' calls)
//   submit_round:  validate → verifier.verify(root + tree)
//   end_round:     sampling transform → accept → commit → emit (stop checks)
//
// The verifier is the sequence's KV side. Engine::generate_tokens runs one sequence over
// the engine's own verifier, whose verify() runs the target pass at once; the server's
// scheduler drafts for all its sequences in one propose call per strategy, gives each a
// BatchVerifier whose verify() only records the rows, and runs the passes of all its
// sequences as one LlamaModel::forward_batch between the two halves. Both run this code, so
// a round is the same whether it is batched or not.
//
// Thread rule: one thread at a time; the parts must outlive the sequence.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "engine/generation_stats.hpp"
#include "engine/proposer.hpp"
#include "grammar/token_constraint.hpp"
#include "sampling/penalties.hpp"
#include "sampling/sampling_transform.hpp"

namespace specd {

class Tokenizer;
class Verifier;
class AcceptanceRule;
class AdaptiveK;
class Emitter;

// The sampling transform's parameters from a [sampling] section.
SamplingParams sampling_params(const SamplingConfig& s);

// What a sequence runs with; none of it is owned by the sequence.
struct SequenceParts {
  const Tokenizer* tokenizer = nullptr;
  Verifier* verifier = nullptr;                   // the sequence's KV side
  Proposer* proposer = nullptr;                   // null: plain decoding
  ProposerSequence* proposer_sequence = nullptr;  // this sequence's state in `proposer`
  AcceptanceRule* rule = nullptr;                 // set when proposer is
  AdaptiveK* adaptive = nullptr;                  // k = "auto": the draft length per round
  Rng* rng = nullptr;                             // the sequence's draws (proposer and sampler)
  std::string target_path;                        // names the target in errors
};

class Sequence {
 public:
  // Checks the request (UsageError): sampling settings, max_tokens >= 1, prompt tokens in
  // the vocabulary, room left in the context after the prompt.
  Sequence(const SequenceParts& parts, std::vector<int32_t> prompt, const SamplingConfig& sampling,
           int max_tokens, std::function<void(const std::string&)> on_text);
  ~Sequence();
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  // Records each generated token's log-probability and its `top` alternatives (0..20;
  // TokenLogprob), in the result and, as each token is emitted (before its text), through
  // `on_logprob` when given. Call before start().
  void set_logprobs(int top, std::function<void(const TokenLogprob&)> on_logprob = {});
  // Processes the prompt: verifier.begin (a BatchVerifier records it and prefills in chunks).
  void start();
  // The start of a round. Returns false, ending the sequence, when the context has no room
  // left (stop_reason "context"); otherwise `call` says what to draft (capacity 0: nothing,
  // a plain round), to be passed to parts.proposer's propose().
  bool prepare_round(ProposeCall& call);
  // After the draft (if any) was written into `call`: validates it and gives the verifier
  // the round's rows. `draft_s` is this sequence's share of the drafting time. Throws
  // specd::Error with the call's error when its drafting failed.
  void submit_round(const ProposeCall& call, double draft_s);
  // The second half, once the verifier's pass has written the logits. `pass_s` is that
  // pass's time when it ran elsewhere (a batched step); < 0: it ran inside submit_round.
  void end_round(double pass_s = -1);
  // Ends the sequence before its next round with this stop reason ("cancelled", ...).
  void stop(const std::string& reason);
  bool done() const { return done_; }
  // The result (call once, when done).
  GenerationResult finish();
  GenerationStats& stats() { return result_.stats; }
  size_t prompt_size() const { return prompt_size_; }
  size_t generated() const { return result_.tokens.size(); }  // tokens emitted so far
  // For a scheduler planning the next round's draft: the most nodes it may draft (the
  // context's room after the root, and the tokens it may still emit less one), and the
  // tokens its proposer has not drafted after (its catch-up when it drafts now).
  uint32_t draft_room() const;
  uint32_t proposer_lag() const { return static_cast<uint32_t>(sequence_.size() - proposed_at_); }

 private:
  SequenceParts parts_;
  SamplingConfig sampling_config_;
  SamplingParams sampling_;
  std::unique_ptr<Penalties> penalties_;         // presence/frequency penalties, logit_bias
  std::unique_ptr<TokenConstraint> constraint_;  // the grammar, when there is one
  specd_token_filter filter_{};                  // constraint_ offered to the proposer (ABI 0.6)
  static int32_t filter_apply(void* context, const specd_token* path, uint32_t n_path,
                              float* logits, uint32_t n);
  std::vector<int32_t> row_path_;   // a verified row's draft tokens (penalties, grammar)
  std::vector<uint8_t> dead_rows_;  // rows after which the grammar allows no token
  void mask_row(std::span<float> row, size_t r);
  int logprobs_top_ = -1;  // -1: no logprobs
  std::function<void(const TokenLogprob&)> on_logprob_;
  std::vector<float> raw_logits_;  // the round's rows before penalties (logprobs)
  void record_logprob(int32_t token, size_t row);
  std::function<void(const std::string&)> on_text_;  // the emitter refers to it
  std::unique_ptr<Emitter> emitter_;
  std::vector<int32_t> sequence_;  // prompt, then every emitted token
  size_t prompt_size_ = 0;
  size_t max_tokens_ = 0;
  size_t proposed_at_ = 0;     // the sequence's length when the proposer last drafted (0: never)
  uint32_t proposer_lag_ = 0;  // this round's catch-up for the proposer (AdaptiveKHorizon)
  uint32_t vocab_ = 0;
  uint32_t hidden_dim_ = 0;  // features the proposer needs (0: none)
  bool proposer_started_ = false;
  bool done_ = false;
  GenerationResult result_;
  Draft draft_;
  std::vector<float> logits_, hidden_, prompt_hidden_, kept_hidden_;
  std::vector<double> p_;
  std::vector<int32_t> emitted_;
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_, generate_start_;
  double draft_s_ = 0, pass_s_ = 0;
};

}  // namespace specd
