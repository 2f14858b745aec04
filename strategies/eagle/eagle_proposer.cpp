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
#include <memory>
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

class EagleProposer : public specd::strategies::FeatureHeadSequences<EagleProposer> {
 public:
  EagleProposer(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
                const specd_proposer_context& context, const specd_transform&)
      // Unknown keys are reported before any value is read.
      : depth_((params.require_known({"depth", "top_k", "max_nodes"}),
                positive(params, "depth", 5, 64))),
        top_k_(std::min(positive(params, "top_k", 4, 64), context.vocab_size)),
        max_nodes_(positive(params, "max_nodes", 24, 4096)),
        head_(host, "eagle", {"specd-eagle", "eagle3"}, model_path, context, depth_ * top_k_),
        dim_(head_.dim()),
        vocab_(std::min(head_.vocab(), context.vocab_size)) {
    top_k_ = std::min(top_k_, vocab_);
  }

  // Catch-up for every drafting sequence in batched passes, then the trees grow level by
  // level, one batched head pass per level over every sequence's expanded nodes.
  void propose(std::span<specd::sdk::ProposeItem<Sequence>> items) {
    std::vector<Tree> trees;
    for (auto& item : items) {
      item.start_draft(SPECD_SIBLINGS_DETERMINISTIC, false);
      const uint32_t n_feat = head_.n_features(item.sequence);
      if (n_feat == 0 || n_feat + 1 != item.tokens.size()) continue;
      if (n_feat + depth_ * top_k_ > head_.capacity()) continue;
      Tree& t = trees.emplace_back();
      t.item = &item;
      t.n_feat = n_feat;
      t.root_logits.resize(head_.vocab());
      t.root_feature.resize(dim_);
    }
    if (trees.empty()) return;
    std::vector<specd::strategies::FeatureHead::CatchUp> jobs;
    for (Tree& t : trees)
      jobs.push_back(
          {&t.item->sequence, t.item->tokens, t.root_logits.data(), t.root_feature.data()});
    head_.catch_up(jobs);
    for (Tree& t : trees) {
      add_children(t, -1, t.root_logits.data(), 0.0, t.level);
      keep_best(t, t.level);
    }
    std::vector<specd::strategies::FeatureHead::Rows> rows;
    for (uint32_t d = 2; d <= depth_; ++d) {
      rows.clear();
      std::vector<Tree*> in_pass;
      for (Tree& t : trees)
        if (!t.level.empty()) in_pass.push_back(&t);
      if (in_pass.empty()) break;
      for (Tree* t : in_pass) expand(*t, rows.emplace_back());
      head_.forward(rows);
      for (Tree* t : in_pass) grow(*t);
    }
    for (Tree& t : trees) emit(t, t.item->out);
  }

 private:
  friend FeatureHeadSequences;
  struct Node {
    specd_token token;
    int32_t parent;        // index into nodes, -1 = the root
    double score;          // log of the cumulative draft confidence
    uint32_t depth;        // 1 = a child of the root
    int32_t element = -1;  // pending head element once expanded
  };

  // One sequence's tree this round.
  struct Tree {
    specd::sdk::ProposeItem<Sequence>* item = nullptr;
    uint32_t n_feat = 0;
    std::vector<float> root_logits;       // [head vocab] of the last true element
    std::vector<float> root_feature;      // [dim] its output feature
    std::vector<Node> nodes;              // in creation order
    std::vector<int32_t> level;           // the kept nodes of the deepest level
    std::vector<float> element_features;  // [pending, dim] output features of expanded nodes
    uint32_t pending = 0;
    std::vector<float> inputs, logits, hidden;  // the level's head pass
  };

  // EAGLE-2: level 1 = the root's top_k children; each further level expands the previous
  // level's kept nodes in one head pass and keeps the top_k of all their children. This
  // fills a tree's rows of the pass that expands its level.
  void expand(Tree& t, specd::strategies::FeatureHead::Rows& r) {
    const uint32_t m = static_cast<uint32_t>(t.level.size());
    t.inputs.resize(static_cast<size_t>(m) * dim_);
    const int32_t first_element = static_cast<int32_t>(t.pending);
    for (uint32_t i = 0; i < m; ++i) {
      Node& node = t.nodes[t.level[i]];
      r.tokens.push_back(node.token);
      r.positions.push_back(static_cast<int32_t>(t.n_feat - 1 + node.depth));
      r.parents.push_back(node.parent < 0 ? -1 : t.nodes[node.parent].element);
      const float* feature =
          node.parent < 0 ? t.root_feature.data() : features_of(t, t.nodes[node.parent].element);
      std::copy_n(feature, dim_, t.inputs.data() + static_cast<size_t>(i) * dim_);
      node.element = first_element + static_cast<int32_t>(i);
    }
    t.logits.resize(static_cast<size_t>(m) * head_.vocab());
    t.hidden.resize(static_cast<size_t>(m) * dim_);
    r.state = &t.item->sequence;
    r.features = t.inputs.data();
    r.logits = t.logits.data();
    r.hidden = t.hidden.data();
  }

  // After the pass: the expanded nodes' children, the best top_k of them the next level.
  void grow(Tree& t) {
    const uint32_t m = static_cast<uint32_t>(t.level.size());
    t.pending += m;
    t.element_features.insert(t.element_features.end(), t.hidden.begin(), t.hidden.end());
    std::vector<int32_t> next;
    for (uint32_t i = 0; i < m; ++i)
      add_children(t, t.level[i], t.logits.data() + static_cast<size_t>(i) * head_.vocab(),
                   t.nodes[t.level[i]].score, next);
    keep_best(t, next);
    t.level = std::move(next);
  }

  const float* features_of(const Tree& t, int32_t element) const {
    return t.element_features.data() + static_cast<size_t>(element) * dim_;
  }

  // Appends the top_k children of `parent` (log-softmax of its logits added to `base`).
  void add_children(Tree& t, int32_t parent, const float* logits, double base,
                    std::vector<int32_t>& added) {
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
    const uint32_t depth = parent < 0 ? 1 : t.nodes[parent].depth + 1;
    for (uint32_t i = 0; i < top_k_; ++i) {
      t.nodes.push_back({ids[i], parent, base + logits[ids[i]] - log_z, depth});
      added.push_back(static_cast<int32_t>(t.nodes.size()) - 1);
    }
  }

  // Keeps the top_k of `level` by score (ties: earlier node); the rest leave the tree.
  void keep_best(Tree& t, std::vector<int32_t>& level) {
    std::stable_sort(level.begin(), level.end(),
                     [&](int32_t a, int32_t b) { return t.nodes[a].score > t.nodes[b].score; });
    for (size_t i = top_k_; i < level.size(); ++i) t.nodes[level[i]].score = -INFINITY;
    if (level.size() > top_k_) level.resize(top_k_);
    std::sort(level.begin(), level.end());
  }

  // Reranks the kept nodes to the most confident max_nodes (a parent is never less
  // confident than its child, and ties go to the shallower, earlier node) and writes them
  // in creation order, which puts parents first.
  void emit(const Tree& t, specd_draft_output& out) {
    const std::vector<Node>& nodes = t.nodes;
    std::vector<int32_t> order;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].score > -INFINITY) order.push_back(static_cast<int32_t>(i));
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      if (nodes[a].score != nodes[b].score) return nodes[a].score > nodes[b].score;
      return nodes[a].depth < nodes[b].depth;
    });
    const uint32_t limit = std::min(max_nodes_, out.capacity);
    std::vector<char> chosen(nodes.size(), 0);
    uint32_t count = 0;
    for (int32_t i : order) {
      if (count == limit) break;
      const int32_t parent = nodes[i].parent;
      if (parent >= 0 && !chosen[parent]) continue;
      chosen[i] = 1;
      ++count;
    }
    std::vector<int32_t> number(nodes.size(), 0);
    uint32_t n = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!chosen[i]) continue;
      out.tokens[n] = nodes[i].token;
      out.parents[n] = nodes[i].parent < 0 ? 0 : number[nodes[i].parent];
      number[i] = static_cast<int32_t>(++n);
    }
    out.n_nodes = n;
  }

  uint32_t depth_, top_k_, max_nodes_;
  specd::strategies::FeatureHead head_;
  uint32_t dim_;
  uint32_t vocab_;  // the rows of the head that are target tokens
};

}  // namespace

SPECD_BATCH_PROPOSER_PLUGIN(EagleProposer, "org.specd.propose.eagle", "eagle", "1.1.0",
                            "EAGLE head on target features, EAGLE-2 dynamic draft tree, one "
                            "batched head pass per tree level",
                            SPECD_PROPOSER_NEEDS_TARGET_HIDDEN | SPECD_PROPOSER_TREES,
                            "exact-match")
