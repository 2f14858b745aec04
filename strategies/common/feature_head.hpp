// A draft head that runs on the target's features (EAGLE, MTP), through the host's model
// service (specd/model.h): opens the head file against the run's target and checks its
// architecture and width, owns the head's KV cache, collects the true target features the
// engine hands over, and brings the cache up to date with them before each draft.
//
// The cache holds the elements built from true features (committed); elements a proposer
// drafts from the head's own output features stay pending and are dropped by the next
// catch_up. Thread rule: like its proposer, used by one thread at a time.
#pragma once

#include <specd/model.h>
#include <specd/proposer.h>
#include <specd/cpp/host.hpp>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

namespace specd::strategies {

class FeatureHead {
 public:
  // `who` names the proposer in messages; `architecture` is the head kind expected in the
  // file (specd-eagle, specd-mtp); `extra_capacity` cache rows are reserved for drafting.
  FeatureHead(sdk::Host host, const std::string& who, const std::string& architecture,
              const char* model_path, const specd_proposer_context& context,
              uint32_t extra_capacity)
      : host_(host.raw()), api_(host.raw()->models), dim_(context.hidden_dim) {
    if (!model_path || !*model_path)
      throw sdk::invalid_argument(who + " needs [proposer] model = \"path/to/" + who + ".gguf\"");
    if (dim_ == 0)
      throw sdk::invalid_argument(who + " needs target features; the verifier offers none");
    check(api_->head_open(host_->context, model_path, context.target_path, nullptr, 0, &model_));
    try {
      specd_model_info info{};
      info.struct_size = sizeof(info);
      check(api_->info(host_->context, model_, &info));
      if (info.architecture != architecture)
        throw sdk::invalid_argument(who + ": " + model_path + " is a " + info.architecture +
                                    " file, not " + architecture);
      if (info.hidden_dim != dim_)
        throw sdk::invalid_argument(who + ": the head's width differs from the target's");
      vocab_ = info.vocab_size;
      capacity_ = std::max<uint32_t>(4096, 2 * info.context_length) + extra_capacity;
      check(api_->cache_create(host_->context, model_, capacity_, &cache_));
    } catch (...) {
      release();
      throw;
    }
  }
  ~FeatureHead() { release(); }
  FeatureHead(const FeatureHead&) = delete;
  FeatureHead& operator=(const FeatureHead&) = delete;

  uint32_t vocab() const { return vocab_; }  // the head's output rows
  uint32_t dim() const { return dim_; }
  uint32_t capacity() const { return capacity_; }
  // True target features received so far: one per sequence element but the last.
  uint32_t n_features() const { return static_cast<uint32_t>(features_.size() / dim_); }

  // A new sequence: empties the cache and keeps the prompt's features.
  void begin(std::span<const specd_token> prompt, const float* hidden) {
    check(api_->truncate(host_->context, model_, cache_, 0));
    features_.clear();
    if (hidden && prompt.size() > 1) features_.assign(hidden, hidden + (prompt.size() - 1) * dim_);
  }

  // Appends the features of the accepted tokens and the root (accepted.size() + 1 rows).
  void commit(std::span<const specd_token> accepted, const float* hidden) {
    if (hidden) features_.insert(features_.end(), hidden, hidden + (accepted.size() + 1) * dim_);
  }

  // Runs and commits the elements whose true features are not in the cache yet (the last
  // is re-run when all are, so its outputs are at hand) and writes the last one's logits
  // [vocab] and output feature [dim]. Element i pairs feature i with token seq[i + 1].
  void catch_up(std::span<const specd_token> seq, float* last_logits, float* last_feature) {
    const uint32_t n_feat = n_features();
    const uint32_t done = std::min(api_->cache_size(host_->context, cache_), n_feat - 1);
    check(api_->truncate(host_->context, model_, cache_, done));
    const uint32_t m = n_feat - done;
    std::vector<specd_token> tokens(m);
    std::vector<int32_t> positions(m), parents(m), rows(m);
    for (uint32_t i = 0; i < m; ++i) {
      tokens[i] = seq[done + i + 1];
      positions[i] = static_cast<int32_t>(done + i);
      parents[i] = static_cast<int32_t>(i) - 1;
      rows[i] = static_cast<int32_t>(i);
    }
    std::vector<float> logits(static_cast<size_t>(m) * vocab_);
    std::vector<float> hidden(static_cast<size_t>(m) * dim_);
    forward(features_.data() + static_cast<size_t>(done) * dim_, tokens.data(), positions.data(),
            parents.data(), m, logits.data(), hidden.data());
    check(api_->commit(host_->context, model_, cache_, rows.data(), m));
    std::copy(logits.end() - vocab_, logits.end(), last_logits);
    std::copy(hidden.end() - dim_, hidden.end(), last_feature);
  }

  // One head pass over m pending elements (specd_model_api.head_forward).
  void forward(const float* features, const specd_token* tokens, const int32_t* positions,
               const int32_t* parents, uint32_t m, float* logits, float* out_features) {
    check(api_->head_forward(host_->context, model_, cache_, features, tokens, positions, parents,
                             m, logits, out_features));
  }

  void check(specd_status* status) const { sdk::Host(host_).check(status); }

 private:
  void release() {
    if (cache_) api_->cache_free(host_->context, cache_);
    if (model_) api_->close(host_->context, model_);
    cache_ = nullptr;
    model_ = nullptr;
  }

  const specd_host* host_;
  const specd_model_api* api_;
  uint32_t dim_;
  uint32_t vocab_ = 0, capacity_ = 0;
  specd_model* model_ = nullptr;
  specd_model_cache* cache_ = nullptr;
  std::vector<float> features_;  // [n_features, dim] true target features
};

}  // namespace specd::strategies
