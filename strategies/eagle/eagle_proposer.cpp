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
#include <specd/model.h>
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

namespace {


class EagleProposer {
 public:
  EagleProposer(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
                const specd_proposer_context& context, const specd_transform&)
      : host_(host.raw()), api_(host.raw()->models), dim_(context.hidden_dim) {
    params.require_known({"depth", "top_k", "max_nodes"});
    depth_ = static_cast<uint32_t>(positive(params, "depth", 5, 64));
    top_k_ = static_cast<uint32_t>(positive(params, "top_k", 4, 64));
    max_nodes_ = static_cast<uint32_t>(positive(params, "max_nodes", 24, 4096));
    if (!model_path || !*model_path)
      throw specd::sdk::invalid_argument("eagle needs [proposer] model = \"path/to/eagle.gguf\"");
    if (dim_ == 0)
      throw specd::sdk::invalid_argument("eagle needs target features; the verifier offers none");
    check(api_->head_open(host_->context, model_path, context.target_path, nullptr, 0, &head_));
    try {
      specd_model_info info{};
      info.struct_size = sizeof(info);
      check(api_->info(host_->context, head_, &info));
      if (std::string(info.architecture) != "specd-eagle")
        throw specd::sdk::invalid_argument(std::string("eagle: ") + model_path + " is a " +
                                           info.architecture + " file, not specd-eagle");
      if (info.hidden_dim != dim_)
        throw specd::sdk::invalid_argument("eagle: the head's width differs from the target's");
      head_vocab_ = info.vocab_size;
      vocab_ = std::min(info.vocab_size, context.vocab_size);
      if (top_k_ > vocab_) top_k_ = vocab_;
      capacity_ = std::max<uint32_t>(4096, 2 * info.context_length) + depth_ * top_k_;
      check(api_->cache_create(host_->context, head_, capacity_, &cache_));
    } catch (...) {
      release();
      throw;
    }
  }

  ~EagleProposer() { release(); }

  void begin(std::span<const specd_token> prompt, const float* hidden) {
    check(api_->truncate(host_->context, head_, cache_, 0));
    features_.clear();
    if (hidden && prompt.size() > 1) features_.assign(hidden, hidden + (prompt.size() - 1) * dim_);
  }

  void propose(std::span<const specd_token> seq, specd_rng*, specd_draft_output& out) {
    out.n_nodes = 0;
    out.scheme = SPECD_SIBLINGS_DETERMINISTIC;
    out.has_q = 0;
    const uint32_t n_feat = static_cast<uint32_t>(features_.size() / dim_);
    if (n_feat == 0 || n_feat + 1 != seq.size()) return;
    if (n_feat + depth_ * top_k_ > capacity_) return;
    catch_up(seq, n_feat);
    grow_tree(n_feat);
    emit(out);
  }

  void commit(std::span<const specd_token> accepted, specd_token, const float* hidden) {
    if (hidden) features_.insert(features_.end(), hidden, hidden + (accepted.size() + 1) * dim_);
  }

 private:
  struct Node {
    specd_token token;
    int32_t parent;        // index into nodes_, -1 = the root
    double score;          // log of the cumulative draft confidence
    uint32_t depth;        // 1 = a child of the root
    int32_t element = -1;  // pending head element once expanded
  };

  static int64_t positive(const specd::sdk::Params& params, const char* key, int64_t fallback,
                          int64_t most) {
    const int64_t v = params.get_int(key, fallback);
    if (v < 1 || v > most)
      throw specd::sdk::invalid_argument("eagle: " + std::string(key) + " must be in [1, " +
                                         std::to_string(most) + "]");
    return v;
  }

  // Runs and commits the elements from true features not yet cached (re-running the last
  // when all are); keeps the last one's logits and output feature for the root.
  void catch_up(std::span<const specd_token> seq, uint32_t n_feat) {
    uint32_t done = std::min(api_->cache_size(host_->context, cache_), n_feat - 1);
    check(api_->truncate(host_->context, head_, cache_, done));
    const uint32_t m = n_feat - done;
    std::vector<specd_token> tokens(m);
    std::vector<int32_t> positions(m), parents(m), rows(m);
    for (uint32_t i = 0; i < m; ++i) {
      tokens[i] = seq[done + i + 1];
      positions[i] = static_cast<int32_t>(done + i);
      parents[i] = static_cast<int32_t>(i) - 1;
      rows[i] = static_cast<int32_t>(i);
    }
    std::vector<float> logits(static_cast<size_t>(m) * head_vocab_);
    std::vector<float> hidden(static_cast<size_t>(m) * dim_);
    check(api_->head_forward(host_->context, head_, cache_, features_.data() + done * dim_,
                             tokens.data(), positions.data(), parents.data(), m, logits.data(),
                             hidden.data()));
    check(api_->commit(host_->context, head_, cache_, rows.data(), m));
    root_logits_.assign(logits.end() - head_vocab_, logits.end());
    root_feature_.assign(hidden.end() - dim_, hidden.end());
  }

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
      logits.resize(static_cast<size_t>(m) * head_vocab_);
      hidden.resize(static_cast<size_t>(m) * dim_);
      check(api_->head_forward(host_->context, head_, cache_, inputs.data(), tokens.data(),
                               positions.data(), parents.data(), m, logits.data(), hidden.data()));
      pending_ += m;
      element_features_.insert(element_features_.end(), hidden.begin(), hidden.end());
      std::vector<int32_t> next;
      for (uint32_t i = 0; i < m; ++i)
        add_children(level[i], logits.data() + static_cast<size_t>(i) * head_vocab_,
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

  void check(specd_status* status) const { specd::sdk::Host(host_).check(status); }

  void release() {
    if (cache_) api_->cache_free(host_->context, cache_);
    if (head_) api_->close(host_->context, head_);
    cache_ = nullptr;
    head_ = nullptr;
  }

  const specd_host* host_;
  const specd_model_api* api_;
  uint32_t dim_, depth_ = 5, top_k_ = 4, max_nodes_ = 24;
  uint32_t vocab_ = 0, head_vocab_ = 0, capacity_ = 0;
  specd_model* head_ = nullptr;
  specd_model_cache* cache_ = nullptr;
  std::vector<float> features_;          // [n_feat, dim] true target features
  std::vector<float> root_logits_;       // [head_vocab] of the last true element
  std::vector<float> root_feature_;      // [dim] its output feature
  std::vector<Node> nodes_;              // this round's tree, in creation order
  std::vector<float> element_features_;  // [pending, dim] output features of drafted elements
  uint32_t pending_ = 0;
};

}  // namespace

SPECD_PROPOSER_PLUGIN(EagleProposer, "org.specd.propose.eagle", "eagle", "1.0.0",
                      "EAGLE head on target features, EAGLE-2 dynamic draft tree",
                      SPECD_PROPOSER_NEEDS_TARGET_HIDDEN | SPECD_PROPOSER_TREES, "exact-match")
