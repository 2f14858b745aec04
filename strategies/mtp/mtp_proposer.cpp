// MTP (DeepSeek-V3 style multi-token prediction, train/FORMATS.md section 6): a module on
// the target's last hidden state (BEFORE its final norm) and the embedding of the next
// token predicts the token after; drafting chains by feeding the module's own output
// feature back as the next element's hidden state, at the next RoPE position.
//
// Parameters ([proposer]): model = the specd-mtp GGUF (bound to the run's target);
// mode = "sample" (default: each token drawn from q, the module's distribution after the
// run's sampling transform) or "greedy" (the argmax of q, reported with a one-hot q). q is
// returned either way; the exact `rejection` rule is the default.
//
// The module's KV cache holds the elements built from true target features (committed);
// drafted elements stay pending and are dropped at the next round.
#include <specd/cpp/distribution.hpp>
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "common/feature_head.hpp"

namespace {

class MtpProposer {
 public:
  MtpProposer(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
              const specd_proposer_context& context, const specd_transform& transform)
      : host_(host.raw()),
        transform_(transform),
        k_(context.draft_length),
        vocab_(context.vocab_size),
        greedy_((params.require_known({"mode"}),
                 params.get_choice("mode", {"sample", "greedy"}) == "greedy")),
        head_(host, "mtp", "specd-mtp", model_path, context, 0),
        logits_(head_.vocab()),
        feature_(head_.dim()),
        q_(vocab_) {}

  void begin(std::span<const specd_token> prompt, const float* hidden) {
    head_.begin(prompt, hidden);
  }

  void propose(std::span<const specd_token> seq, specd_rng* rng, specd_draft_output& out) {
    out.n_nodes = 0;
    out.scheme = SPECD_SIBLINGS_IID;
    out.has_q = 1;
    const uint32_t n_feat = head_.n_features();
    if (n_feat == 0 || n_feat + 1 != seq.size() || n_feat > head_.capacity()) return;
    head_.catch_up(seq, logits_.data(), feature_.data());
    uint32_t want = std::min<uint32_t>(k_, out.capacity);
    want = std::min<uint32_t>(want, head_.capacity() - n_feat);
    for (uint32_t i = 0; i < want; ++i) {
      double* q_row = out.q ? out.q + static_cast<size_t>(i) * vocab_ : q_.data();
      const uint32_t n = std::min(head_.vocab(), vocab_);
      check(transform_.apply(transform_.context, logits_.data(), n, q_row));
      std::fill(q_row + n, q_row + vocab_, 0.0);
      const specd_token token = greedy_ ? argmax(q_row) : sample(q_row, rng);
      if (greedy_) {
        std::fill(q_row, q_row + vocab_, 0.0);
        q_row[token] = 1.0;
      }
      out.tokens[i] = token;
      out.parents[i] = static_cast<int32_t>(i);
      out.n_nodes = i + 1;
      if (i + 1 == want) break;
      // The next element: the module's own output feature and the drafted token.
      const int32_t position = static_cast<int32_t>(n_feat + i);
      const int32_t parent = static_cast<int32_t>(i) - 1;
      std::vector<float> in = feature_;
      head_.forward(in.data(), &token, &position, &parent, 1, logits_.data(), feature_.data());
    }
  }

  void commit(std::span<const specd_token> accepted, specd_token, const float* hidden) {
    head_.commit(accepted, hidden);
  }

 private:
  void check(specd_status* status) const { head_.check(status); }

  specd_token sample(const double* q, specd_rng* rng) const {
    return specd::sdk::sample_index(q, vocab_, host_->rng_uniform(host_->context, rng));
  }

  specd_token argmax(const double* q) const { return specd::sdk::argmax_index(q, vocab_); }

  const specd_host* host_;
  specd_transform transform_;
  uint32_t k_, vocab_;
  bool greedy_;
  specd::strategies::FeatureHead head_;
  std::vector<float> logits_;   // [head vocab] of the last element run
  std::vector<float> feature_;  // [dim] output feature of the last element run
  std::vector<double> q_;
};

}  // namespace

SPECD_PROPOSER_PLUGIN(MtpProposer, "org.specd.propose.mtp", "mtp", "1.0.0",
                      "MTP module (DeepSeek-V3 style) on target features drafting a chain of k",
                      SPECD_PROPOSER_NEEDS_TARGET_HIDDEN | SPECD_PROPOSER_PROVIDES_Q, "rejection")
