// EAGLE (train/FORMATS.md section 5: an EAGLE-1 head over the target's last-layer features)
// drafting EAGLE-2's dynamic tree: from the root, expand the top_k nodes of each level by
// cumulative draft confidence (the product of the head's probabilities along the path) for
// `depth` levels, keeping top_k children per expanded node, then rerank everything kept to
// the max_nodes most confident nodes. Children are chosen deterministically (no q), so the
// default rule `exact-match` is exact at every temperature.
//
// The head keeps its own KV cache over its element sequence: elements built from true
// target features are committed; drafted elements (built from the head's own predicted
// features) stay pending and are dropped at the next round, then rebuilt from the
// target's true features once those are known.
//
// Parameters ([proposer]): model = the specd-eagle GGUF (bound to the run's target);
// depth (default 5), top_k (default 4), max_nodes (default 24).
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "common/feature_head.hpp"

namespace {

// An integer parameter in [1, most].
uint32_t positive(const specd::sdk::Params& params, const char* key, int64_t fallback,
                  int64_t most) {
  const int64_t v = params.get_int(key, fallback);
  if (v < 1 || v > most)
    throw params.invalid(key,
                         "must be in [1, " + std::to_string(most) + "], not " + std::to_string(v));
  return static_cast<uint32_t>(v);
}

class EagleProposer {
 public:
  EagleProposer(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
                const specd_proposer_context& context, const specd_transform&)
      // Unknown keys are reported before any value is read.
      : depth_((params.require_known({"depth", "top_k", "max_nodes"}),
                positive(params, "depth", 5, 64))),
        top_k_(std::min(positive(params, "top_k", 4, 64), context.vocab_size)),
        max_nodes_(positive(params, "max_nodes", 24, 4096)),
        head_(host, "eagle", "specd-eagle", model_path, context, depth_ * top_k_),
        dim_(head_.dim()),
        vocab_(std::min(head_.vocab(), context.vocab_size)),
        root_logits_(head_.vocab()),
        root_feature_(dim_) {
    top_k_ = std::min(top_k_, vocab_);
  }

  void begin(std::span<const specd_token> prompt, const float* hidden) {
    head_.begin(prompt, hidden);
  }

  void propose(std::span<const specd_token> seq, specd_rng*, specd_draft_output& out) {
    out.n_nodes = 0;
    out.scheme = SPECD_SIBLINGS_DETERMINISTIC;
    out.has_q = 0;
    const uint32_t n_feat = head_.n_features();
    if (n_feat == 0 || n_feat + 1 != seq.size()) return;
    if (n_feat + depth_ * top_k_ > head_.capacity()) return;
    head_.catch_up(seq, root_logits_.data(), root_feature_.data());
    grow_tree(n_feat);
    emit(out);
  }

  void commit(std::span<const specd_token> accepted, specd_token, const float* hidden) {
    head_.commit(accepted, hidden);
  }

 private:
  struct Node {
    specd_token token;
    int32_t parent;        // index into nodes_, -1 = the root
    double score;          // log of the cumulative draft confidence
    uint32_t depth;        // 1 = a child of the root
    int32_t element = -1;  // pending head element once expanded
  };

  // EAGLE-2: level 1 = the root's top_k children; each further level expands the previous
  // level's kept nodes in one head call and keeps the top_k of all their children.
  void grow_tree(uint32_t n_feat) {
    nodes_.clear();
    std::vector<int32_t> level;
    add_children(-1, root_logits_.data(), 0.0, level);
    keep_best(level);
    std::vector<float> logits, hidden, inputs;
    for (uint32_t d = 2; d <= depth_ && !level.empty(); ++d) {
      const uint32_t m = static_cast<uint32_t>(level.size());
      std::vector<specd_token> tokens(m);
      std::vector<int32_t> positions(m), parents(m);
      inputs.resize(static_cast<size_t>(m) * dim_);
      const int32_t first_element = static_cast<int32_t>(pending_);
      for (uint32_t i = 0; i < m; ++i) {
        Node& node = nodes_[level[i]];
        tokens[i] = node.token;
        positions[i] = static_cast<int32_t>(n_feat - 1 + node.depth);
        parents[i] = node.parent < 0 ? -1 : nodes_[node.parent].element;
        const float* feature =
            node.parent < 0 ? root_feature_.data() : features_of(nodes_[node.parent].element);
        std::copy_n(feature, dim_, inputs.data() + static_cast<size_t>(i) * dim_);
        node.element = first_element + static_cast<int32_t>(i);
      }
      logits.resize(static_cast<size_t>(m) * head_.vocab());
      hidden.resize(static_cast<size_t>(m) * dim_);
      head_.forward(inputs.data(), tokens.data(), positions.data(), parents.data(), m,
                    logits.data(), hidden.data());
      pending_ += m;
      element_features_.insert(element_features_.end(), hidden.begin(), hidden.end());
      std::vector<int32_t> next;
      for (uint32_t i = 0; i < m; ++i)
        add_children(level[i], logits.data() + static_cast<size_t>(i) * head_.vocab(),
                     nodes_[level[i]].score, next);
      keep_best(next);
      level = std::move(next);
    }
    pending_ = 0;
    element_features_.clear();
  }

  const float* features_of(int32_t element) const {
    return element_features_.data() + static_cast<size_t>(element) * dim_;
  }

  // Appends the top_k children of `parent` (log-softmax of its logits added to `base`).
  void add_children(int32_t parent, const float* logits, double base, std::vector<int32_t>& added) {
    double max = logits[0];
    for (uint32_t x = 1; x < vocab_; ++x) max = std::max<double>(max, logits[x]);
    double sum = 0;
    for (uint32_t x = 0; x < vocab_; ++x) sum += std::exp(logits[x] - max);
    const double log_z = max + std::log(sum);
    std::vector<specd_token> ids(vocab_);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + top_k_, ids.end(),
                      [&](specd_token a, specd_token b) {
                        return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
                      });
    const uint32_t depth = parent < 0 ? 1 : nodes_[parent].depth + 1;
    for (uint32_t i = 0; i < top_k_; ++i) {
      nodes_.push_back({ids[i], parent, base + logits[ids[i]] - log_z, depth});
      added.push_back(static_cast<int32_t>(nodes_.size()) - 1);
    }
  }

  // Keeps the top_k of `level` by score (ties: earlier node); the rest leave the tree.
  void keep_best(std::vector<int32_t>& level) {
    std::stable_sort(level.begin(), level.end(),
                     [&](int32_t a, int32_t b) { return nodes_[a].score > nodes_[b].score; });
    for (size_t i = top_k_; i < level.size(); ++i) nodes_[level[i]].score = -INFINITY;
    if (level.size() > top_k_) level.resize(top_k_);
    std::sort(level.begin(), level.end());
  }

  // Reranks the kept nodes to the most confident max_nodes (a parent is never less
  // confident than its child, and ties go to the shallower, earlier node) and writes them
  // in creation order, which puts parents first.
  void emit(specd_draft_output& out) {
    std::vector<int32_t> order;
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].score > -INFINITY) order.push_back(static_cast<int32_t>(i));
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      if (nodes_[a].score != nodes_[b].score) return nodes_[a].score > nodes_[b].score;
      return nodes_[a].depth < nodes_[b].depth;
    });
    const uint32_t limit = std::min(max_nodes_, out.capacity);
    std::vector<char> chosen(nodes_.size(), 0);
    uint32_t count = 0;
    for (int32_t i : order) {
      if (count == limit) break;
      const int32_t parent = nodes_[i].parent;
      if (parent >= 0 && !chosen[parent]) continue;
      chosen[i] = 1;
      ++count;
    }
    std::vector<int32_t> number(nodes_.size(), 0);
    uint32_t n = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!chosen[i]) continue;
      out.tokens[n] = nodes_[i].token;
      out.parents[n] = nodes_[i].parent < 0 ? 0 : number[nodes_[i].parent];
      number[i] = static_cast<int32_t>(++n);
    }
    out.n_nodes = n;
  }

  uint32_t depth_, top_k_, max_nodes_;
  specd::strategies::FeatureHead head_;
  uint32_t dim_;
  uint32_t vocab_;                       // the rows of the head that are target tokens
  std::vector<float> root_logits_;       // [head vocab] of the last true element
  std::vector<float> root_feature_;      // [dim] its output feature
  std::vector<Node> nodes_;              // this round's tree, in creation order
  std::vector<float> element_features_;  // [pending, dim] output features of drafted elements
  uint32_t pending_ = 0;
};

}  // namespace

SPECD_PROPOSER_PLUGIN(EagleProposer, "org.specd.propose.eagle", "eagle", "1.0.0",
                      "EAGLE head on target features, EAGLE-2 dynamic draft tree",
                      SPECD_PROPOSER_NEEDS_TARGET_HIDDEN | SPECD_PROPOSER_TREES, "exact-match")
