// A draft head that runs on the target's features (EAGLE, MTP): a BoundHead that also owns
// the head's KV cache, collects the true target features the engine hands over, and brings
// the cache up to date with them before each draft.
//
// The cache holds the elements built from true features (committed); elements a proposer
// drafts from the head's own output features stay pending and are dropped by the next
// catch_up. Thread rule: like its proposer, used by one thread at a time.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "common/bound_head.hpp"

namespace specd::strategies {

class FeatureHead {
 public:
  // `who`, `architecture`: as BoundHead; `extra_capacity` cache rows are reserved for
  // drafting.
  FeatureHead(sdk::Host host, const std::string& who, const std::string& architecture,
              const char* model_path, const specd_proposer_context& context,
              uint32_t extra_capacity)
      : head_(host, who, architecture, model_path, context),
        capacity_(std::max<uint32_t>(4096, 2 * head_.info().context_length) + extra_capacity) {
    check(head_.api()->cache_create(head_.context(), head_.model(), capacity_, &cache_));
  }
  ~FeatureHead() { head_.api()->cache_free(head_.context(), cache_); }
  FeatureHead(const FeatureHead&) = delete;
  FeatureHead& operator=(const FeatureHead&) = delete;

  uint32_t vocab() const { return head_.info().vocab_size; }  // the head's output rows
  uint32_t dim() const { return head_.info().hidden_dim; }
  uint32_t capacity() const { return capacity_; }
  // True target features received so far: one per sequence element but the last.
  uint32_t n_features() const { return static_cast<uint32_t>(features_.size() / dim()); }

  // A new sequence: empties the cache and keeps the prompt's features.
  void begin(std::span<const specd_token> prompt, const float* hidden) {
    check(head_.api()->truncate(head_.context(), head_.model(), cache_, 0));
    features_.clear();
    if (hidden && prompt.size() > 1) features_.assign(hidden, hidden + (prompt.size() - 1) * dim());
  }

  // Appends the features of the accepted tokens and the root (accepted.size() + 1 rows).
  void commit(std::span<const specd_token> accepted, const float* hidden) {
    if (hidden) features_.insert(features_.end(), hidden, hidden + (accepted.size() + 1) * dim());
  }

  // Runs and commits the elements whose true features are not in the cache yet (the last
  // is re-run when all are, so its outputs are at hand) and writes the last one's logits
  // [vocab] and output feature [dim]. Element i pairs feature i with token seq[i + 1].
  void catch_up(std::span<const specd_token> seq, float* last_logits, float* last_feature) {
    const uint32_t n_feat = n_features();
    const uint32_t done = std::min(head_.api()->cache_size(head_.context(), cache_), n_feat - 1);
    check(head_.api()->truncate(head_.context(), head_.model(), cache_, done));
    const uint32_t m = n_feat - done;
    std::vector<specd_token> tokens(m);
    std::vector<int32_t> positions(m), parents(m), rows(m);
    for (uint32_t i = 0; i < m; ++i) {
      tokens[i] = seq[done + i + 1];
      positions[i] = static_cast<int32_t>(done + i);
      parents[i] = static_cast<int32_t>(i) - 1;
      rows[i] = static_cast<int32_t>(i);
    }
    std::vector<float> logits(static_cast<size_t>(m) * vocab());
    std::vector<float> hidden(static_cast<size_t>(m) * dim());
    forward(features_.data() + static_cast<size_t>(done) * dim(), tokens.data(), positions.data(),
            parents.data(), m, logits.data(), hidden.data());
    check(head_.api()->commit(head_.context(), head_.model(), cache_, rows.data(), m));
    std::copy(logits.end() - vocab(), logits.end(), last_logits);
    std::copy(hidden.end() - dim(), hidden.end(), last_feature);
  }

  // One head pass over m pending elements (specd_model_api.head_forward).
  void forward(const float* features, const specd_token* tokens, const int32_t* positions,
               const int32_t* parents, uint32_t m, float* logits, float* out_features) {
    check(head_.api()->head_forward(head_.context(), head_.model(), cache_, features, tokens,
                                    positions, parents, m, logits, out_features));
  }

  void check(specd_status* status) const { head_.check(status); }

 private:
  BoundHead head_;
  uint32_t capacity_;
  specd_model_cache* cache_ = nullptr;
  std::vector<float> features_;  // [n_features, dim] true target features
};

}  // namespace specd::strategies
