// Medusa-1 (train/FORMATS.md section 4): K heads on the target's last hidden state, head N
// predicting the token N+2 places after the feature's position, i.e. draft depth N+1 after
// the root. The draft is a static tree in Medusa's `choices` format: a list of paths, each
// a list of top-k ranks per depth ([1, 0] = the 2nd-ranked token of head 0, then the top
// token of head 1). Children are chosen deterministically (top-k by logit), no q, so the
// default rule `exact-match` is exact at every temperature; the whole tree is verified in
// one target pass with the tree mask.
//
// Parameters ([proposer]): model = the specd-medusa GGUF (bound to the run's target);
// choices = the tree (TOML array of arrays of integers; default kDefaultChoices).
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "common/bound_head.hpp"

namespace {

using Path = std::vector<uint32_t>;

// A 26-node tree over 4 heads, widest near the root where acceptance is likeliest.
const std::vector<std::vector<int64_t>> kDefaultChoices = {
    {0},          {1},          {2},          {3},       {0, 0},       {0, 1},       {0, 2},
    {1, 0},       {1, 1},       {2, 0},       {3, 0},    {0, 0, 0},    {0, 0, 1},    {0, 1, 0},
    {1, 0, 0},    {0, 2, 0},    {2, 0, 0},    {0, 0, 2}, {0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 1, 0},
    {0, 1, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 2}, {4},       {0, 3}};

// `choices` (an array of integer arrays, ABI 0.2) as paths of ranks.
std::vector<Path> read_choices(const specd::sdk::Params& params) {
  std::vector<Path> out;
  for (const std::vector<int64_t>& list : params.get_int_lists("choices", kDefaultChoices)) {
    if (list.empty()) throw params.invalid("choices", "has an empty path");
    Path path;
    for (int64_t rank : list) {
      if (rank < 0) throw params.invalid("choices", "ranks must be integers >= 0");
      if (rank > 1000000) throw params.invalid("choices", "has a rank that is too large");
      path.push_back(static_cast<uint32_t>(rank));
    }
    out.push_back(path);
  }
  return out;
}

class MedusaProposer {
 public:
  MedusaProposer(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
                 const specd_proposer_context& context, const specd_transform&)
      // Unknown keys are reported before the model is opened.
      : head_((params.require_known({"choices"}), host), "medusa", {"specd-medusa"}, model_path,
              context),
        dim_(context.hidden_dim),
        heads_(head_.info().head_count),
        vocab_(std::min(head_.info().vocab_size, context.vocab_size)),
        head_vocab_(head_.info().vocab_size) {
    build_tree(read_choices(params), params);
  }

  // One sequence: the feature of the token before its root.
  struct Sequence {
    std::vector<float> feature;  // [dim]
  };

  std::unique_ptr<Sequence> open() { return std::make_unique<Sequence>(); }

  void begin(Sequence& s, std::span<const specd_token> prompt, const float* hidden) {
    s.feature.clear();
    if (hidden && prompt.size() > 1)
      s.feature.assign(hidden + (prompt.size() - 2) * dim_, hidden + (prompt.size() - 1) * dim_);
  }

  // One batched pass of the heads over every drafting sequence's feature row (rows are
  // independent: a sequence's logits do not depend on the others), then each sequence's
  // static tree filled from its ranked candidates.
  void propose(std::span<specd::sdk::ProposeItem<Sequence>> items) {
    std::vector<specd::sdk::ProposeItem<Sequence>*> drafting;
    for (auto& item : items) {
      item.start_draft(SPECD_SIBLINGS_DETERMINISTIC, false);
      if (!item.sequence.feature.empty()) drafting.push_back(&item);
    }
    if (drafting.empty()) return;
    const size_t per = static_cast<size_t>(heads_) * head_vocab_;
    std::vector<float> logits(drafting.size() * per);
    std::vector<specd_model_batch_entry> entries(drafting.size());
    std::vector<const specd_model_batch_entry*> pointers(drafting.size());
    for (size_t e = 0; e < drafting.size(); ++e) {
      entries[e] = {sizeof(specd_model_batch_entry),
                    1,
                    nullptr,
                    nullptr,
                    nullptr,
                    nullptr,
                    drafting[e]->sequence.feature.data(),
                    0,
                    0,
                    logits.data() + e * per,
                    nullptr};
      pointers[e] = &entries[e];
    }
    head_.check(head_.api()->forward_batch(head_.context(), head_.model(), pointers.data(),
                                           static_cast<uint32_t>(pointers.size())));
    for (size_t e = 0; e < drafting.size(); ++e) fill(logits.data() + e * per, drafting[e]->out);
  }

  void commit(Sequence& s, std::span<const specd_token> accepted, specd_token,
              const float* hidden) {
    if (hidden)
      s.feature.assign(hidden + accepted.size() * dim_, hidden + (accepted.size() + 1) * dim_);
  }

 private:
  // The static tree from one sequence's head logits [heads, head_vocab].
  void fill(const float* logits, specd_draft_output& out) const {
    std::vector<std::vector<specd_token>> ranked(depth_width_.size());
    for (size_t h = 0; h < depth_width_.size(); ++h)
      ranked[h] = top_k(logits + h * head_vocab_, depth_width_[h]);
    const uint32_t n = std::min<uint32_t>(static_cast<uint32_t>(nodes_.size()), out.capacity);
    for (uint32_t i = 0; i < n; ++i) {
      out.tokens[i] = ranked[nodes_[i].depth - 1][nodes_[i].rank];
      out.parents[i] = nodes_[i].parent;
    }
    out.n_nodes = n;
  }

  struct Node {
    uint32_t depth;  // 1 = a child of the root
    uint32_t rank;   // top-k rank within head depth-1
    int32_t parent;  // node number, 0 = root
  };

  // Orders the paths by (length, ranks) so that parents precede children and numbers them.
  void build_tree(std::vector<Path> paths, const specd::sdk::Params& params) {
    std::sort(paths.begin(), paths.end(), [](const Path& a, const Path& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
    std::map<Path, int32_t> number;
    for (const Path& p : paths) {
      if (p.size() > heads_)
        throw params.invalid("choices", "has a path " + std::to_string(p.size()) +
                                            " deep; the file has " + std::to_string(heads_) +
                                            " heads");
      int32_t parent = 0;
      if (p.size() > 1) {
        auto it = number.find(Path(p.begin(), p.end() - 1));
        if (it == number.end())
          throw params.invalid("choices", "has a path without its prefix path");
        parent = it->second;
      }
      if (p.back() >= vocab_)
        throw params.invalid("choices", "has rank " + std::to_string(p.back()) +
                                            ", beyond the vocabulary of " + std::to_string(vocab_));
      const uint32_t depth = static_cast<uint32_t>(p.size());
      nodes_.push_back({depth, p.back(), parent});
      number[p] = static_cast<int32_t>(nodes_.size());
      if (depth_width_.size() < depth) depth_width_.resize(depth, 0);
      depth_width_[depth - 1] = std::max(depth_width_[depth - 1], p.back() + 1);
    }
  }

  // The k highest logits' ids, ties to the lower id.
  std::vector<specd_token> top_k(const float* logits, uint32_t k) const {
    std::vector<specd_token> ids(vocab_);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](specd_token a, specd_token b) {
      return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
    });
    ids.resize(k);
    return ids;
  }

  specd::strategies::BoundHead head_;
  uint32_t dim_, heads_, vocab_, head_vocab_;
  std::vector<Node> nodes_;            // the static tree, node i+1 at index i
  std::vector<uint32_t> depth_width_;  // ranks needed per head
};

}  // namespace

SPECD_BATCH_PROPOSER_PLUGIN(MedusaProposer, "org.specd.propose.medusa", "medusa", "1.1.0",
                            "Medusa heads on the target's last hidden state, static top-k tree, "
                            "one batched head pass per step",
                            SPECD_PROPOSER_NEEDS_TARGET_HIDDEN | SPECD_PROPOSER_TREES,
                            "exact-match")
