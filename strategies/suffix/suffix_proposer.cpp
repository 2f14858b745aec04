// Suffix decoding (SuffixDecoding, Oliaro et al. 2024; as in Arctic Inference): no model. A
// suffix trie (suffix_trie.hpp) over the sequence's own prompt and output, and, opt-in, a
// trie shared by the proposer's sequences over the outputs of earlier requests. Each round
// matches the longest end of the sequence in each trie and grows a draft tree from the match
// by frequency: best-first by the product of the continuations' empirical probabilities,
// nodes below min_prob left out, at most factor x (match length) nodes, so a long match
// drafts much and a short one little. The tree of the trie that promises more accepted
// tokens (the sum of its nodes' probabilities) is proposed. Children are deterministic (no
// q), so exact-match, its default rule, is exact at any temperature.
//
// Parameters ([proposer]): max_depth (24: matches of up to half of it, continuations of up
// to the rest; 48 drafted less on the copy and code tasks), factor (1.0),
// min_prob (0.1), global (false: also learn from this proposer's earlier requests; in the
// server they are other clients' outputs), global_tokens (1000000: what that trie keeps,
// the oldest outputs forgotten first); k from the host bounds the nodes.
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "suffix_trie.hpp"

namespace {

using specd::strategies::SuffixTrie;

// One draft node: its token, its parent among the draft's nodes (0: the root) and the
// probability of its path.
struct Drafted {
  specd_token token;
  int32_t parent;
  double score;
};

class SuffixProposer {
 public:
  struct Sequence {
    SuffixProposer* owner = nullptr;
    SuffixTrie trie;
    std::vector<int32_t> tokens;  // what the trie holds, in order
    size_t prompt = 0;            // of which the prompt
    explicit Sequence(SuffixProposer* o, uint32_t depth) : owner(o), trie(depth) {}
    ~Sequence() { owner->learn(*this); }
  };

  SuffixProposer(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
                 const specd_proposer_context&, const specd_transform&)
      : depth_(
            (params.require_known({"max_depth", "factor", "min_prob", "global", "global_tokens"}),
             static_cast<uint32_t>(params.get_int("max_depth", 24)))),
        factor_(params.get_float("factor", 1.0)),
        min_prob_(params.get_float("min_prob", 0.1)),
        global_(params.get_bool("global", false)),
        global_tokens_(params.get_int("global_tokens", 1000000)),
        shared_(depth_) {
    if (depth_ < 2 || depth_ > 64)
      throw params.invalid("max_depth", "must be in [2, 64], not " + std::to_string(depth_));
    if (!(factor_ > 0 && factor_ <= 64))
      throw params.invalid("factor", "must be in (0, 64], not " + std::to_string(factor_));
    if (!(min_prob_ >= 0 && min_prob_ <= 1))
      throw params.invalid("min_prob", "must be in [0, 1], not " + std::to_string(min_prob_));
    if (global_tokens_ < 1 || global_tokens_ > (int64_t{1} << 26))
      throw params.invalid("global_tokens",
                           "must be in [1, 67108864], not " + std::to_string(global_tokens_));
    if (model_path && *model_path)
      host.log(SPECD_LOG_WARN, "org.specd.propose.suffix",
               std::string("suffix uses no model; ignoring '") + model_path + "'");
  }

  std::unique_ptr<Sequence> open() { return std::make_unique<Sequence>(this, depth_); }

  void begin(Sequence& s, std::span<const specd_token> prompt, const float*) {
    learn(s);
    s.trie.clear();
    s.tokens.clear();
    sync(s, prompt);
    s.prompt = s.tokens.size();
  }

  void propose(std::span<specd::sdk::ProposeItem<Sequence>> items) {
    for (auto& item : items) {
      item.start_draft(SPECD_SIBLINGS_DETERMINISTIC, false);
      sync(item.sequence, item.tokens);
      std::vector<Drafted> best = draft(item.sequence.trie, item.tokens, item.out.capacity);
      if (global_) {
        std::vector<Drafted> other = draft(shared_, item.tokens, item.out.capacity);
        if (promise(other) > promise(best)) best = std::move(other);
      }
      for (size_t i = 0; i < best.size(); ++i) {
        item.out.tokens[i] = best[i].token;
        item.out.parents[i] = best[i].parent;
      }
      item.out.n_nodes = static_cast<uint32_t>(best.size());
    }
  }

  void commit(Sequence&, std::span<const specd_token>, specd_token, const float*) {}

 private:
  // Brings the trie up to `tokens` (the whole accepted sequence); a sequence that is not an
  // extension of what it holds is read afresh.
  static void sync(Sequence& s, std::span<const specd_token> tokens) {
    if (tokens.size() < s.tokens.size() ||
        !std::equal(s.tokens.begin(), s.tokens.end(), tokens.begin())) {
      s.trie.clear();
      s.tokens.clear();
    }
    for (size_t i = s.tokens.size(); i < tokens.size(); ++i) {
      s.trie.push(tokens[i]);
      s.tokens.push_back(tokens[i]);
    }
  }

  // The draft tree grown from the longest match of the end of `context` in `trie`.
  std::vector<Drafted> draft(const SuffixTrie& trie, std::span<const specd_token> context,
                             uint32_t capacity) const {
    // Matches of at most half the depth: the other half is room for the continuation.
    const auto [match, length] = trie.longest_match(context, std::max(depth_ / 2, 1u));
    std::vector<Drafted> out;
    if (length == 0) return out;
    const size_t budget = std::min<size_t>(
        capacity, static_cast<size_t>(std::floor(factor_ * static_cast<double>(length))));
    struct Candidate {
      double score;
      int32_t node, parent;  // trie node; parent among the drafted nodes (0: the root)
      bool operator<(const Candidate& o) const {
        return score != o.score ? score < o.score : node > o.node;  // ties: the older node
      }
    };
    std::priority_queue<Candidate> frontier;
    auto expand = [&](int32_t node, double score, int32_t parent) {
      const SuffixTrie::Node& n = trie.node(node);
      uint64_t total = 0;
      for (const auto& [token, c] : n.children) total += trie.node(c).count;
      for (const auto& [token, c] : n.children)
        frontier.push({score * double(trie.node(c).count) / double(total), c, parent});
    };
    expand(match, 1.0, 0);
    while (out.size() < budget && !frontier.empty()) {
      const Candidate c = frontier.top();
      frontier.pop();
      if (c.score < min_prob_) break;
      out.push_back({trie.node(c.node).token, c.parent, c.score});
      expand(c.node, c.score, static_cast<int32_t>(out.size()));
    }
    return out;
  }

  // The expected number of accepted tokens, were the probabilities right.
  static double promise(const std::vector<Drafted>& d) {
    double sum = 0;
    for (const Drafted& x : d) sum += x.score;
    return sum;
  }

  // A finished (or restarted) sequence's output joins the shared trie, when asked for.
  void learn(Sequence& s) {
    if (!global_ || s.tokens.size() <= s.prompt) return;
    recent_.emplace_back(s.tokens.begin() + static_cast<std::ptrdiff_t>(s.prompt), s.tokens.end());
    kept_ += recent_.back().size();
    if (kept_ > static_cast<size_t>(global_tokens_)) {
      // Forget the oldest outputs down to half the limit, then read the rest afresh.
      while (kept_ > static_cast<size_t>(global_tokens_) / 2 && !recent_.empty()) {
        kept_ -= recent_.front().size();
        recent_.pop_front();
      }
      shared_.clear();
      for (const auto& o : recent_) add_shared(o);
    } else {
      add_shared(recent_.back());
    }
    s.prompt = s.tokens.size();  // learnt once
  }

  void add_shared(const std::vector<int32_t>& output) {
    shared_.end_sequence();
    shared_.push(output);
    shared_.end_sequence();
  }

  uint32_t depth_;
  double factor_, min_prob_;
  bool global_;
  int64_t global_tokens_;
  SuffixTrie shared_;                        // earlier requests' outputs (global = true)
  std::deque<std::vector<int32_t>> recent_;  // what shared_ holds, oldest first
  size_t kept_ = 0;
};

}  // namespace

SPECD_BATCH_PROPOSER_PLUGIN(SuffixProposer, "org.specd.propose.suffix", "suffix", "1.0.0",
                            "suffix decoding: draft trees by frequency from suffix tries over "
                            "the sequence and, opt-in, earlier outputs",
                            SPECD_PROPOSER_TREES, "exact-match")
