#include "engine/batch_verifier.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"

namespace specd {

BatchVerifier::BatchVerifier(LlamaModel& model, uint32_t max_rows, uint32_t chunk_rows,
                             bool prefix_cache, uint64_t prefix_partition)
    : Verifier("verifier 'target' (batched)"),
      model_(model),
      max_rows_(max_rows),
      chunk_rows_(chunk_rows),
      prefix_cache_(prefix_cache) {
  if (max_rows_ == 0 || chunk_rows_ == 0)
    throw Error("batch verifier: rows and chunk sizes must be positive");
  cache_ = model_.new_cache(static_cast<int32_t>(max_rows_));
  cache_->set_prefix_partition(prefix_partition);
  set_info(model_, max_rows_);
}

void BatchVerifier::do_begin(std::span<const specd_token> prompt, float* hidden) {
  model_.truncate(*cache_, 0);
  prompt_.assign(prompt.begin(), prompt.end() - 1);
  prompt_hidden_ = hidden;
  prefilled_ = 0;
  hit_rows_ = 0;
  round_pending_ = false;
  // The prompt's blocks are published as they fill (pass_done): a sliding-window model's cache
  // keeps their window rows until then.
  cache_->set_publish_limit(prefix_cache_ && !hidden ? static_cast<int32_t>(prompt_.size()) : 0);
  if (prefix_cache_ && !hidden)
    prefilled_ = hit_rows_ =
        static_cast<uint32_t>(cache_->adopt_prefix(prompt_, static_cast<int32_t>(prompt_.size())));
}

uint32_t BatchVerifier::take_published() {
  if (!prefix_cache_ || prompt_hidden_ || !prefilling()) return 0;
  const auto held =
      static_cast<size_t>(cache_->adopt_prefix(prompt_, static_cast<int32_t>(prompt_.size())));
  if (held <= prefilled_) return 0;
  const auto taken = static_cast<uint32_t>(held - prefilled_);
  prefilled_ = held;
  hit_rows_ += taken;
  return taken;
}

void BatchVerifier::do_verify(specd_token root, const specd_draft_tree& tree, float* logits,
                              float* hidden) {
  if (prefilling()) throw Error("batch verifier: a round before the prompt was processed");
  const size_t m = tree.n_nodes + 1;
  if (cached_rows() + m > max_rows_) throw Error("verifier: the draft does not fit the context");
  tokens_.resize(m);
  positions_.resize(m);
  parents_.resize(m);
  tokens_[0] = root;
  positions_[0] = static_cast<int32_t>(cached_rows());
  parents_[0] = -1;
  for (size_t i = 1; i < m; ++i) {
    const int32_t parent = tree.parents[i - 1];  // node id; row index equals node id
    tokens_[i] = tree.tokens[i - 1];
    parents_[i] = parent;
    positions_[i] = positions_[parent] + 1;
  }
  logits_ = logits;
  hidden_ = hidden;
  round_pending_ = true;
}

ForwardEntry BatchVerifier::entry() {
  ForwardEntry e;
  e.cache = cache_.get();
  if (prefilling()) {
    chunk_ = static_cast<uint32_t>(std::min<size_t>(chunk_rows_, prompt_.size() - prefilled_));
    tokens_.assign(prompt_.begin() + prefilled_, prompt_.begin() + prefilled_ + chunk_);
    positions_.resize(chunk_);
    parents_.resize(chunk_);
    for (uint32_t i = 0; i < chunk_; ++i) {
      positions_[i] = static_cast<int32_t>(prefilled_ + i);
      parents_[i] = static_cast<int32_t>(i) - 1;
    }
    e.hidden = prompt_hidden_ ? prompt_hidden_ + prefilled_ * hidden_dim() : nullptr;
    e.first_logit_row = static_cast<int32_t>(chunk_);  // no logits: the prompt's last token
                                                       // is the first round's root
  } else if (round_pending_) {
    e.logits = logits_;
    e.hidden = hidden_;
  } else {
    throw Error("batch verifier: no rows wait for a pass");
  }
  if (cached_rows() + tokens_.size() > max_rows_)
    throw Error("batch verifier: " + std::to_string(cached_rows() + tokens_.size()) +
                " rows exceed the " + std::to_string(max_rows_) + " reserved for this sequence");
  e.tokens = tokens_;
  e.positions = positions_;
  e.parents = parents_;
  return e;
}

void BatchVerifier::pass_done() {
  if (prefilling()) {
    rows_.resize(chunk_);
    for (uint32_t i = 0; i < chunk_; ++i) rows_[i] = static_cast<int32_t>(i);
    model_.commit(*cache_, rows_);
    prefilled_ += chunk_;
    if (prefix_cache_ && !prompt_hidden_)
      while (cache_->publish_next(prompt_)) {
      }
  } else {
    round_pending_ = false;
  }
}

void BatchVerifier::do_commit(std::span<const int32_t> path) {
  rows_.assign(1, 0);
  rows_.insert(rows_.end(), path.begin(), path.end());
  model_.commit(*cache_, rows_);
}

}  // namespace specd
