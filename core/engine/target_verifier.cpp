// The built-in verifier: the target model's forward pass over [root, draft nodes] with a
// tree mask, one pass per round, on the host's already loaded model.
#include <vector>

#include "common/error.hpp"
#include "engine/verifier.hpp"
#include "models/llama_model.hpp"

namespace specd {
namespace {

class TargetVerifier final : public Verifier {
 public:
  TargetVerifier(LlamaModel& model, uint32_t context)
      : Verifier("verifier 'target'"), model_(model) {
    uint32_t model_ctx = static_cast<uint32_t>(model.info().n_ctx);
    capacity_ = context == 0 ? model_ctx : std::min(context, model_ctx);
    cache_ = model.new_cache(static_cast<int32_t>(capacity_));
    set_info(model_, capacity_);
  }

 private:
  void do_begin(std::span<const specd_token> prompt, float* hidden) override {
    model_.truncate(*cache_, 0);
    committed_ = 0;
    size_t n = prompt.size() - 1;
    if (n == 0) return;
    std::vector<int32_t> positions(n), parents(n), rows(n);
    for (size_t i = 0; i < n; ++i) {
      positions[i] = static_cast<int32_t>(i);
      parents[i] = static_cast<int32_t>(i) - 1;
      rows[i] = static_cast<int32_t>(i);
    }
    // No logits: the last prompt token is the first round's root, verified with the draft.
    model_.forward(*cache_, prompt.subspan(0, n), positions, parents, nullptr, hidden,
                   /*first_logit_row=*/static_cast<int32_t>(n));
    model_.commit(*cache_, rows);
    committed_ = static_cast<uint32_t>(n);
  }

  void do_verify(specd_token root, const specd_draft_tree& tree, float* logits,
                 float* hidden) override {
    size_t m = tree.n_nodes + 1;
    if (committed_ + m > capacity_) throw Error("verifier: the draft does not fit the context");
    tokens_.resize(m);
    positions_.resize(m);
    parents_.resize(m);
    tokens_[0] = root;
    positions_[0] = static_cast<int32_t>(committed_);
    parents_[0] = -1;
    for (size_t i = 1; i < m; ++i) {
      int32_t parent = tree.parents[i - 1];  // node id; row index equals node id
      tokens_[i] = tree.tokens[i - 1];
      parents_[i] = parent;
      positions_[i] = positions_[parent] + 1;
    }
    model_.forward(*cache_, tokens_, positions_, parents_, logits, hidden);
  }

  void do_commit(std::span<const int32_t> path) override {
    rows_.assign(1, 0);
    rows_.insert(rows_.end(), path.begin(), path.end());
    model_.commit(*cache_, rows_);
    committed_ += static_cast<uint32_t>(rows_.size());
  }

  LlamaModel& model_;
  std::unique_ptr<KvCache> cache_;
  uint32_t capacity_ = 0;
  uint32_t committed_ = 0;
  std::vector<int32_t> tokens_, positions_, parents_, rows_;
};

}  // namespace

std::unique_ptr<Verifier> make_target_verifier(LlamaModel& model, uint32_t context) {
  return std::make_unique<TargetVerifier>(model, context);
}

}  // namespace specd
