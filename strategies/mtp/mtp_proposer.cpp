// MTP (DeepSeek-V3 style multi-token prediction, train/FORMATS.md section 6): a module on
// the target's last hidden state (BEFORE its final norm) and the embedding of the next
// token predicts the token after; drafting chains by feeding the module's own output
// feature back as the next element's hidden state, at the next RoPE position. The MTP layers
// a qwen35 model file carries (llama.cpp's blk.N.nextn.*, in the target file or a separate
// MTP file) run the same way, as llama.cpp's draft-mtp runs them: a layer element pairs a
// token with the feature of the position before (FeatureHead's `shifted`), the target's
// features after its output_norm.
//
// Parameters ([proposer]): model = the specd-mtp GGUF (bound to the run's target), or a file
// with MTP layers; left out, the target file's own MTP layers;
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

#include "common/draft_row.hpp"
#include "common/feature_head.hpp"

namespace {

class MtpProposer : public specd::strategies::FeatureHeadSequences<MtpProposer> {
 public:
  MtpProposer(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
              const specd_proposer_context& context, const specd_transform& transform)
      : host_(host.raw()),
        transform_(transform),
        k_(context.draft_length),
        vocab_(context.vocab_size),
        greedy_((params.require_known({"mode"}),
                 params.get_choice("mode", {"sample", "greedy"}) == "greedy")),
        head_(host, "mtp", {"specd-mtp", "nextn"},
              model_path && *model_path ? model_path : context.target_path, context, 0) {}

  // Catch-up for every drafting sequence in batched passes, then one batched pass per draft
  // step: each sequence's next element is the module's own output feature and the drafted
  // token, at the next RoPE position.
  void propose(std::span<specd::sdk::ProposeItem<Sequence>> items) {
    struct Work {
      specd::sdk::ProposeItem<Sequence>* item;
      uint32_t n_feat, want;
      std::vector<float> logits, feature;
      specd_token token = 0;
    };
    std::vector<Work> work;
    for (auto& item : items) {
      item.start_draft(SPECD_SIBLINGS_IID, true);
      const uint32_t n_feat = head_.n_features(item.sequence);
      if (n_feat == 0 || !head_.covers(item.sequence, item.tokens.size()) ||
          n_feat > head_.capacity())
        continue;
      uint32_t want = std::min<uint32_t>(k_, item.out.capacity);
      want = std::min<uint32_t>(want, head_.capacity() - n_feat);
      if (want == 0) continue;
      work.push_back({&item, n_feat, want, std::vector<float>(head_.vocab()),
                      std::vector<float>(head_.dim())});
    }
    if (work.empty()) return;
    std::vector<specd::strategies::FeatureHead::CatchUp> jobs;
    for (Work& w : work)
      jobs.push_back({&w.item->sequence, w.item->tokens, w.logits.data(), w.feature.data()});
    head_.catch_up(jobs);
    std::vector<specd::strategies::FeatureHead::Rows> rows;
    std::vector<std::vector<float>> inputs;
    for (uint32_t i = 0;; ++i) {
      rows.clear();
      inputs.clear();
      std::vector<Work*> in_pass;
      for (Work& w : work) {
        if (i >= w.want) continue;
        w.token = draw(*w.item, i, w.logits);
        if (i + 1 == w.want) continue;
        in_pass.push_back(&w);
      }
      if (in_pass.empty()) break;
      inputs.reserve(in_pass.size());
      for (Work* w : in_pass) {
        inputs.push_back(w->feature);  // the element's input: the last output feature
        auto& r = rows.emplace_back();
        r.state = &w->item->sequence;
        r.features = inputs.back().data();
        r.tokens = {w->token};
        r.positions = {static_cast<int32_t>(w->n_feat + i)};
        r.parents = {static_cast<int32_t>(i) - 1};
        r.logits = w->logits.data();
        r.hidden = w->feature.data();
      }
      head_.forward(rows);
    }
  }

 private:
  friend FeatureHeadSequences;
  void check(specd_status* status) const { head_.check(status); }

  // Draft token i of an item from q (the module's logits after the run's transform; head
  // ids beyond the target's vocabulary impossible): a draw, or the argmax as a point mass.
  specd_token draw(specd::sdk::ProposeItem<Sequence>& item, uint32_t i,
                   const std::vector<float>& logits) {
    return specd::strategies::draft_chain_token(item, i, logits.data(),
                                                std::min(head_.vocab(), vocab_), vocab_, greedy_,
                                                transform_, *host_);
  }

  const specd_host* host_;
  specd_transform transform_;
  uint32_t k_, vocab_;
  bool greedy_;
  specd::strategies::FeatureHead head_;
};

}  // namespace

SPECD_BATCH_PROPOSER_PLUGIN(MtpProposer, "org.specd.propose.mtp", "mtp", "1.1.0",
                            "MTP module (specd-mtp heads, or a qwen35 file's MTP layers) on target "
                            "features drafting a chain of k, one batched pass per draft step",
                            SPECD_PROPOSER_NEEDS_TARGET_HIDDEN | SPECD_PROPOSER_PROVIDES_Q,
                            "rejection")
