// DFlash block drafting (llama.cpp's draft-dflash): a small non-causal decoder reads the
// target's features of every committed token as K/V rows of its layers (injected once per
// token) and drafts a whole chain in ONE pass over a block [root, mask, ..., mask]: the
// argmax of block row i + 1 is draft token i. The head is llama.cpp's "dflash" GGUF, bound to
// the target by its target layers, width and vocabulary (specd/model.h, head_open).
//
// Each round: the rows of the features that arrived since the last round are injected and
// committed (in pieces of at most the drafter device's invariant_max_rows rows per sequence,
// every sequence in one pass), then one block pass over every drafting sequence; the block's
// rows are dropped again. Drafts are deterministic (no q), so `exact-match` is exact.
//
// Parameters ([proposer]): model = the dflash GGUF; k (at most block_size - 1) tokens a
// round; p_min (default 0): the chain stops before the first token whose probability
// (softmax of its row) is below it.
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/feature_head.hpp"

namespace {

class DflashProposer : public specd::strategies::FeatureHeadSequences<DflashProposer> {
 public:
  DflashProposer(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
                 const specd_proposer_context& context, const specd_transform&)
      : p_min_((params.require_known({"p_min"}), params.get_float("p_min", 0.0))),
        head_(host, "dflash", {"dflash"}, model_path, context, 64),
        vocab_(std::min(head_.vocab(), context.vocab_size)),
        piece_(std::max<uint32_t>(head_.bound().info().invariant_max_rows, 1)) {
    if (!(p_min_ >= 0 && p_min_ < 1))
      throw params.invalid("p_min", "must be in [0, 1), not " + std::to_string(p_min_));
    const specd_model_info& info = head_.bound().info();
    if (info.struct_size <= offsetof(specd_model_info, mask_token) || info.block_size < 2)
      throw specd::sdk::invalid_argument(
          "dflash: this host does not say the drafter's block size and mask token");
    mask_ = info.mask_token;
    if (piece_ < 2)
      throw specd::sdk::invalid_argument(
          "dflash: the drafter's device computes fewer than 2 rows batch-invariantly, and a "
          "block is the root and at least one mask in one piece");
    // A block is the root and k masks, in one piece of the drafter's invariant rows.
    k_ = std::min({context.draft_length, info.block_size - 1, piece_ - 1});
    if (k_ == 0)
      throw specd::sdk::invalid_argument(
          "dflash: k must be at least 1 (the drafter's blocks "
          "hold " +
          std::to_string(info.block_size - 1) + " drafted tokens)");
  }

  void propose(std::span<specd::sdk::ProposeItem<Sequence>> items) {
    std::vector<Job> jobs;
    for (auto& item : items) {
      item.start_draft(SPECD_SIBLINGS_DETERMINISTIC, false);
      const uint32_t n_feat = head_.n_features(item.sequence);
      const uint32_t want = std::min(k_, item.out.capacity);
      if (want == 0 || n_feat == 0 || n_feat + 1 != item.tokens.size()) continue;
      if (n_feat + want + 1 > head_.capacity()) continue;
      Job& j = jobs.emplace_back();
      j.item = &item;
      j.n_feat = n_feat;
      j.want = want;
      const uint32_t cached = api()->cache_size(ctx(), item.sequence.cache);
      j.next = std::min(cached, n_feat);
      check(api()->truncate(ctx(), model(), item.sequence.cache, j.next));
    }
    if (jobs.empty()) return;
    inject(jobs);
    draft(jobs);
  }

 private:
  friend FeatureHeadSequences;
  struct Job {
    specd::sdk::ProposeItem<Sequence>* item = nullptr;
    uint32_t n_feat = 0, want = 0;
    uint32_t next = 0;  // the first feature row not injected yet
    std::vector<specd_token> tokens;
    std::vector<int32_t> positions, parents;
    std::vector<float> logits;
  };

  const specd_model_api* api() const { return head_.bound().api(); }
  void* ctx() const { return head_.bound().context(); }
  specd_model* model() const { return head_.bound().model(); }
  void check(specd_status* status) const { head_.check(status); }

  // The features of the tokens the drafter has not seen, as committed K/V rows.
  void inject(std::vector<Job>& jobs) {
    for (;;) {
      std::vector<specd_model_batch_entry> entries;
      std::vector<Job*> in_pass;
      for (Job& j : jobs) {
        if (j.next == j.n_feat) continue;
        const uint32_t m = std::min(j.n_feat - j.next, piece_);
        j.positions.clear();
        j.parents.clear();
        for (uint32_t i = 0; i < m; ++i) {
          j.positions.push_back(static_cast<int32_t>(j.next + i));
          j.parents.push_back(static_cast<int32_t>(i) - 1);
        }
        in_pass.push_back(&j);
      }
      if (in_pass.empty()) return;
      for (Job* j : in_pass) {
        const uint32_t m = static_cast<uint32_t>(j->positions.size());
        entries.push_back(
            {sizeof(specd_model_batch_entry), m, j->item->sequence.cache, nullptr,
             j->positions.data(), j->parents.data(),
             j->item->sequence.features.data() + static_cast<size_t>(j->next) * head_.dim(), 0, 0,
             nullptr, nullptr});
      }
      run(entries);
      for (Job* j : in_pass) {
        const uint32_t m = static_cast<uint32_t>(j->positions.size());
        std::vector<int32_t> kept(m);
        for (uint32_t i = 0; i < m; ++i) kept[i] = static_cast<int32_t>(i);
        check(api()->commit(ctx(), model(), j->item->sequence.cache, kept.data(), m));
        j->next += m;
      }
    }
  }

  // One block pass over every job: [root, mask x want] at positions n_feat..; the argmax of
  // row i + 1 is draft token i. The block's rows are dropped afterwards.
  void draft(std::vector<Job>& jobs) {
    std::vector<specd_model_batch_entry> entries;
    for (Job& j : jobs) {
      const uint32_t m = j.want + 1;
      j.tokens.assign(m, mask_);
      j.tokens[0] = j.item->tokens.back();
      j.positions.clear();
      j.parents.clear();
      for (uint32_t i = 0; i < m; ++i) {
        j.positions.push_back(static_cast<int32_t>(j.n_feat + i));
        j.parents.push_back(static_cast<int32_t>(i) - 1);
      }
      j.logits.resize(static_cast<size_t>(m) * head_.vocab());
      entries.push_back({sizeof(specd_model_batch_entry), m, j.item->sequence.cache,
                         j.tokens.data(), j.positions.data(), j.parents.data(), nullptr, 0, 0,
                         j.logits.data(), nullptr});
    }
    run(entries);
    for (Job& j : jobs) {
      check(api()->truncate(ctx(), model(), j.item->sequence.cache, j.n_feat));
      auto& out = j.item->out;
      for (uint32_t i = 0; i < j.want; ++i) {
        const float* row = j.logits.data() + static_cast<size_t>(i + 1) * head_.vocab();
        const float* best = std::max_element(row, row + vocab_);  // lowest id on ties
        if (p_min_ > 0 && probability_of_max(row, *best) < p_min_) break;
        out.tokens[i] = static_cast<specd_token>(best - row);
        out.parents[i] = static_cast<int32_t>(i);
        out.n_nodes = i + 1;
      }
    }
  }

  double probability_of_max(const float* row, float best) const {
    double total = 0;
    for (uint32_t t = 0; t < vocab_; ++t) total += std::exp(static_cast<double>(row[t]) - best);
    return 1.0 / total;
  }

  void run(std::vector<specd_model_batch_entry>& entries) {
    std::vector<const specd_model_batch_entry*> pointers;
    for (const auto& e : entries) pointers.push_back(&e);
    check(api()->forward_batch(ctx(), model(), pointers.data(),
                               static_cast<uint32_t>(pointers.size())));
  }

  double p_min_;
  specd::strategies::FeatureHead head_;
  uint32_t vocab_, piece_;
  uint32_t k_ = 0;
  specd_token mask_ = 0;
};

}  // namespace

SPECD_BATCH_PROPOSER_PLUGIN(DflashProposer, "org.specd.propose.dflash", "dflash", "1.0.0",
                            "DFlash block drafter (llama.cpp's dflash GGUF) over target "
                            "features: a chain of k tokens from one non-causal block pass",
                            SPECD_PROPOSER_NEEDS_TARGET_HIDDEN, "exact-match")
