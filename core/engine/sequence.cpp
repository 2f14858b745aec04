#include "engine/sequence.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "acceptance/acceptance_rule.hpp"
#include "acceptance/pairing.hpp"
#include "acceptance/tree_validation.hpp"
#include "common/error.hpp"
#include "engine/adaptive_k.hpp"
#include "engine/emitter.hpp"
#include "engine/padding_mask.hpp"
#include "engine/verifier.hpp"
#include "sampling/sample_row.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {
namespace {

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

SamplingParams sampling_params(const SamplingConfig& s) {
  SamplingParams p;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.min_p = s.min_p;
  return p;
}

Sequence::Sequence(const SequenceParts& parts, std::vector<int32_t> prompt,
                   const SamplingConfig& sampling, int max_tokens,
                   std::function<void(const std::string&)> on_text)
    : parts_(parts),
      sampling_config_(sampling),
      sampling_(sampling_params(sampling)),
      on_text_(std::move(on_text)) {
  validate_sampling_params(sampling_);
  if (max_tokens < 1) throw UsageError("the number of tokens to generate must be at least 1");
  Verifier& verifier = *parts_.verifier;
  vocab_ = verifier.vocab_size();
  penalties_ = std::make_unique<Penalties>(
      PenaltyParams{sampling.presence_penalty, sampling.frequency_penalty, sampling.logit_bias,
                    sampling.repeat_penalty, sampling.repeat_last_n},
      vocab_);
  if (!sampling.grammar.empty()) {
    if (sampling.ignore_eos)
      throw UsageError(
          "ignore_eos cannot be combined with a grammar (the grammar decides where "
          "the output may end)");
    if (sampling.min_tokens > 0)
      throw UsageError(
          "min_tokens cannot be combined with a grammar (the grammar decides where the output "
          "may end)");
    constraint_ = std::make_unique<TokenConstraint>(sampling.grammar, *parts_.tokenizer);
    filter_ = {sizeof(specd_token_filter), 0, this, &Sequence::filter_apply};
  }
  for (int32_t t : prompt)
    if (t < 0 || static_cast<uint32_t>(t) >= vocab_)
      throw UsageError("prompt token " + std::to_string(t) + " is outside the vocabulary");
  if (prompt.size() >= verifier.context_length())
    throw UsageError("the prompt has " + std::to_string(prompt.size()) +
                     " tokens; the context holds " + std::to_string(verifier.context_length()) +
                     " (" + parts_.target_path + "), leaving no room to generate");
  start_ = Clock::now();
  prompt_size_ = prompt.size();
  max_tokens_ = static_cast<size_t>(max_tokens);
  result_.stats.prompt_tokens = prompt.size();
  hidden_dim_ = parts_.proposer && parts_.proposer->needs_hidden() ? verifier.hidden_dim() : 0;
  for (int32_t t : prompt) penalties_->add_context(t);
  sequence_ = std::move(prompt);
  emitter_ = std::make_unique<Emitter>(*parts_.tokenizer, sampling_config_, max_tokens, on_text_,
                                       sequence_);
}

Sequence::~Sequence() = default;

void Sequence::start() {
  const auto t = Clock::now();
  prompt_hidden_.resize(hidden_dim_ ? (sequence_.size() - 1) * hidden_dim_ : 0);
  parts_.verifier->begin(sequence_, hidden_dim_ ? prompt_hidden_.data() : nullptr);
  result_.stats.prefill_s = seconds(Clock::now() - t);
}

void Sequence::stop(const std::string& reason) {
  if (done_) return;
  result_.stop_reason = reason;
  done_ = true;
}

uint32_t Sequence::draft_room() const {
  const Verifier& verifier = *parts_.verifier;
  const uint32_t room = verifier.context_length() - verifier.committed();
  const size_t emitted = sequence_.size() - prompt_size_;
  const size_t remaining = max_tokens_ > emitted ? max_tokens_ - emitted : 0;
  return static_cast<uint32_t>(
      std::min<size_t>(room > 0 ? room - 1 : 0, remaining > 0 ? remaining - 1 : 0));
}

bool Sequence::prepare_round(ProposeCall& call) {
  call = ProposeCall{};
  if (done_) return false;
  Verifier& verifier = *parts_.verifier;
  if (!proposer_started_) {
    // The prompt's features exist once the prefill has run (a batched one runs in chunks).
    if (parts_.proposer)
      parts_.proposer_sequence->begin(std::span<const int32_t>(sequence_.data(), prompt_size_),
                                      hidden_dim_ ? prompt_hidden_.data() : nullptr);
    proposer_started_ = true;
    generate_start_ = Clock::now();
  }
  // Room left in the context: the root takes one row, each draft node one more.
  const uint32_t room = verifier.context_length() - verifier.committed();
  if (room == 0) {
    stop("context");
    return false;
  }
  draft_.n_nodes = 0;
  draft_.vocab = vocab_;
  if (!parts_.proposer) return true;
  // The root takes a row, and a round emits at most its drafted tokens and one more: nodes
  // beyond the context's room or the tokens still to generate are never used (a block
  // drafter such as DFlash drafts a shorter block then, as llama.cpp's server does). The
  // proposer caps it further at its max_nodes.
  uint32_t capacity = draft_room();
  // Tokens the proposer has not drafted after: a stateful one (a draft model) catches up on
  // them before drafting, a one-time cost the controller weighs against what remains.
  proposer_lag_ = static_cast<uint32_t>(sequence_.size() - proposed_at_);
  if (parts_.adaptive) {
    const size_t emitted = sequence_.size() - prompt_size_;
    AdaptiveKHorizon horizon;
    horizon.remaining = static_cast<uint32_t>(
        std::min<size_t>(max_tokens_ > emitted ? max_tokens_ - emitted : 0, room));
    horizon.proposer_lag = proposer_lag_;
    capacity = std::min(capacity, parts_.adaptive->next_k(horizon));
  }
  if (capacity == 0) return true;
  call.sequence = parts_.proposer_sequence;
  call.tokens = sequence_;
  call.capacity = capacity;
  call.rng = parts_.rng;
  call.draft = &draft_;
  call.filter = constraint_ ? &filter_ : nullptr;
  return true;
}

int32_t Sequence::filter_apply(void* context, const specd_token* path, uint32_t n_path,
                               float* logits, uint32_t n) {
  // Called from a plugin: nothing may propagate through the C ABI.
  try {
    auto* self = static_cast<Sequence*>(context);
    return self->constraint_->apply(std::span<float>(logits, n),
                                    std::span<const int32_t>(path, n_path)) ==
                   TokenConstraint::Row::kMasked
               ? 1
               : 0;
  } catch (...) {
    return 0;  // the target's own mask reports the grammar's problem in end_round
  }
}

void Sequence::submit_round(const ProposeCall& call, double draft_s) {
  Verifier& verifier = *parts_.verifier;
  if (!call.error.empty()) throw Error(call.error);
  if (call.capacity > 0) proposed_at_ = sequence_.size();
  const specd_draft_tree tree = draft_.tree();
  if (draft_.n_nodes > 0) {
    validate_tree(tree, vocab_, "proposer '" + parts_.proposer->name() + "'");
    check_tree_pairing(parts_.rule->info(), tree, parts_.proposer->name());
  }
  draft_s_ = draft_s;
  result_.stats.draft_s += draft_s_;

  const size_t rows = draft_.n_nodes + 1;
  logits_.resize(rows * vocab_);
  hidden_.resize(hidden_dim_ * rows);
  const auto t1 = Clock::now();
  try {
    verifier.verify(sequence_.back(), tree, logits_.data(), hidden_dim_ ? hidden_.data() : nullptr);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw Error("target " + parts_.target_path + ": " + e.what());
  }
  pass_s_ = seconds(Clock::now() - t1);
}

void Sequence::end_round(double pass_s) {
  GenerationStats& stats = result_.stats;
  if (pass_s >= 0) pass_s_ = pass_s;
  const auto t1 = Clock::now();
  const size_t rows = draft_.n_nodes + 1;
  const uint32_t vocab = vocab_;
  p_.resize(rows * vocab);
  try {
    for (size_t r = 0; r < rows; ++r) {
      const std::span<float> row(logits_.data() + r * vocab, vocab);
      mask_padding(row, static_cast<size_t>(parts_.tokenizer->n_tokens()));
      if (logprobs_top_ >= 0) {
        raw_logits_.resize(rows * vocab);
        std::copy(row.begin(), row.end(), raw_logits_.begin() + r * vocab);
      }
      mask_row(row, r);
      transform_logits(row, sampling_, std::span<double>(p_.data() + r * vocab, vocab));
    }
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    // NaN logits: name the model they came from.
    throw Error("target " + parts_.target_path + ": " + e.what());
  }
  const auto t2 = Clock::now();
  stats.verify_s += pass_s_ + seconds(t2 - t1);

  const specd_draft_tree tree = draft_.tree();
  AcceptResult accepted;
  if (draft_.n_nodes == 0) {
    accepted.next_token =
        static_cast<specd_token>(sample(std::span<const double>(p_.data(), vocab), *parts_.rng));
  } else {
    specd_target_dists dists{sizeof(specd_target_dists), static_cast<uint32_t>(rows), vocab,
                             p_.data()};
    validate_target(dists, tree, "verifier");
    accepted = parts_.rule->accept(tree, dists, *parts_.rng);
  }
  stats.accept_s += seconds(Clock::now() - t2);

  if (constraint_) {
    // A dead row is an error only where the round uses it: row 0 and the accepted nodes'.
    for (size_t i = 0; i <= accepted.path.size(); ++i)
      if (dead_rows_[i == 0 ? 0 : static_cast<size_t>(accepted.path[i - 1])])
        throw GrammarError(  // the request's grammar, not the engine, is at fault
            "grammar: no token of the vocabulary can continue the output here (the "
            "grammar needs a character no token spells)");
  }
  const auto t3 = Clock::now();
  parts_.verifier->commit(accepted.path);
  stats.commit_s += seconds(Clock::now() - t3);
  // The controller is charged the whole per-row cost of the round: the pass, then turning
  // every row's logits into a distribution and accepting (on small models, as much again).
  if (parts_.adaptive)
    parts_.adaptive->observe({draft_.n_nodes, static_cast<uint32_t>(accepted.path.size()), draft_s_,
                              pass_s_ + seconds(Clock::now() - t1),
                              parts_.verifier->last_overhead_s(), proposer_lag_});
  ++stats.rounds;
  stats.drafted += draft_.n_nodes;
  stats.accepted += accepted.path.size();
  const uint32_t depth = tree_depth(tree);
  if (stats.drafted_at.size() < depth) {
    stats.drafted_at.resize(depth, 0);
    stats.accepted_at.resize(depth, 0);
  }
  for (uint32_t d = 0; d < depth; ++d) {
    ++stats.drafted_at[d];
    if (d < accepted.path.size()) ++stats.accepted_at[d];
  }

  emitted_.clear();
  for (int32_t node : accepted.path) emitted_.push_back(draft_.tokens[node - 1]);
  emitted_.push_back(accepted.next_token);
  if (stats.rounds == 1) stats.first_token_s = seconds(Clock::now() - start_);
  for (size_t i = 0; i < emitted_.size(); ++i) {
    const int32_t token = emitted_[i];
    // Token i was chosen from row 0 (the root's) or from the row of the i-th accepted node.
    if (logprobs_top_ >= 0 &&
        !(token == parts_.tokenizer->eos_id() && !sampling_config_.ignore_eos))
      record_logprob(token, i == 0 ? 0 : static_cast<size_t>(accepted.path[i - 1]));
    sequence_.push_back(token);
    penalties_->add(token);
    if (constraint_) constraint_->commit(token);
    if (!emitter_->push(token, result_)) {
      done_ = true;
      break;
    }
  }
  if (!done_ && parts_.proposer) {
    // Features of the root and the accepted nodes, in sequence order.
    kept_hidden_.resize(hidden_dim_ * (accepted.path.size() + 1));
    for (size_t i = 0; hidden_dim_ && i <= accepted.path.size(); ++i) {
      const size_t row = i == 0 ? 0 : static_cast<size_t>(accepted.path[i - 1]);
      std::copy_n(hidden_.data() + row * hidden_dim_, hidden_dim_,
                  kept_hidden_.data() + i * hidden_dim_);
    }
    const std::vector<specd_token> accepted_tokens(emitted_.begin(), emitted_.end() - 1);
    parts_.proposer_sequence->commit(accepted_tokens, accepted.next_token,
                                     hidden_dim_ ? kept_hidden_.data() : nullptr);
  }
}

void Sequence::mask_row(std::span<float> row, size_t r) {
  // min_tokens: a row whose token would come before that many bars the end of sequence (by
  // its position: the committed tokens and its depth in the draft), as plain decoding does.
  if (sampling_config_.min_tokens > 0 && !sampling_config_.ignore_eos) {
    const int32_t eos = parts_.tokenizer->eos_id();
    size_t depth = 0;
    for (size_t node = r; node != 0; node = static_cast<size_t>(draft_.parents[node - 1])) ++depth;
    if (eos >= 0 && static_cast<size_t>(eos) < row.size() &&
        result_.tokens.size() + depth < static_cast<size_t>(sampling_config_.min_tokens))
      row[static_cast<size_t>(eos)] = -std::numeric_limits<float>::infinity();
  }
  if (!penalties_->active() && !constraint_) return;
  if (constraint_ && r == 0) dead_rows_.assign(draft_.n_nodes + 1, 0);
  // Row r verifies node r: its path is the draft tokens from the root's child to it.
  row_path_.clear();
  for (size_t node = r; node != 0; node = static_cast<size_t>(draft_.parents[node - 1]))
    row_path_.push_back(draft_.tokens[node - 1]);
  std::reverse(row_path_.begin(), row_path_.end());
  if (penalties_->active()) penalties_->apply(row, row_path_);
  if (constraint_ && constraint_->apply(row, row_path_) == TokenConstraint::Row::kDead)
    dead_rows_[r] = 1;
}

void Sequence::set_logprobs(int top, std::function<void(const TokenLogprob&)> on_logprob) {
  if (top < 0 || top > 20) throw UsageError("logprobs: the number of alternatives must be 0 to 20");
  logprobs_top_ = top;
  on_logprob_ = std::move(on_logprob);
}

void Sequence::record_logprob(int32_t token, size_t row) {
  const std::span<const float> z(raw_logits_.data() + row * vocab_, vocab_);
  float max = -std::numeric_limits<float>::infinity();
  for (float x : z) max = std::max(max, x);
  double sum = 0;
  for (float x : z) sum += std::exp(double(x) - double(max));
  const double log_norm = double(max) + std::log(sum);
  TokenLogprob lp;
  lp.token = token;
  lp.logprob = static_cast<float>(double(z[static_cast<size_t>(token)]) - log_norm);
  if (logprobs_top_ > 0) {
    std::vector<int32_t> ids(vocab_);
    for (uint32_t t = 0; t < vocab_; ++t) ids[t] = static_cast<int32_t>(t);
    const size_t n = std::min<size_t>(static_cast<size_t>(logprobs_top_), vocab_);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), ids.end(),
                      [&](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
    for (size_t j = 0; j < n; ++j)
      lp.top.emplace_back(ids[j], static_cast<float>(double(z[ids[j]]) - log_norm));
  }
  if (on_logprob_) on_logprob_(lp);
  result_.logprobs.push_back(std::move(lp));
}

GenerationResult Sequence::finish() {
  emitter_->finish(result_);
  GenerationStats& stats = result_.stats;
  stats.generated_tokens = result_.tokens.size() + (result_.stop_reason == "eos" ? 1 : 0);
  stats.generate_s = proposer_started_ ? seconds(Clock::now() - generate_start_) : 0;
  done_ = true;
  return std::move(result_);
}

}  // namespace specd
