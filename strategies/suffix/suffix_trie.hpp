// A suffix trie of bounded depth over token sequences, with occurrence counts: every window
// of up to `depth` consecutive tokens of every sequence added is a path from the root, and
// a node's count is how many times its path occurred. What SuffixDecoding's suffix tree
// answers (the longest match of the context's end and how often each continuation followed
// it), for continuations of up to depth - match tokens.
//
// Appending one token costs O(depth) (the windows ending at it); a sequence of n tokens
// holds at most n * depth nodes. Thread rule: used by one thread at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace specd::strategies {

class SuffixTrie {
 public:
  struct Node {
    int32_t token = -1;
    uint32_t count = 0;
    std::vector<std::pair<int32_t, int32_t>> children;  // (token, node), in insertion order
  };

  explicit SuffixTrie(uint32_t depth) : depth_(depth) { clear(); }

  uint32_t depth() const { return depth_; }
  size_t size() const { return nodes_.size(); }
  const Node& node(int32_t i) const { return nodes_[static_cast<size_t>(i)]; }

  // Forgets everything.
  void clear() {
    nodes_.assign(1, Node{});
    edges_.clear();
    open_.clear();
  }

  // Starts a new sequence: windows never span two sequences.
  void end_sequence() { open_.clear(); }

  // Appends a token to the current sequence: every open window (those starting at the last
  // depth - 1 tokens, and the one starting here) is extended by it.
  void push(int32_t token) {
    open_.push_back(0);  // the window starting at this token
    size_t keep = 0;
    for (size_t i = 0; i < open_.size(); ++i) {
      const int32_t child = child_or_add(open_[i], token);
      ++nodes_[static_cast<size_t>(child)].count;
      // Window i now holds open_.size() - i tokens: at full depth it is closed; the others
      // stay open, oldest first.
      if (open_.size() - i < depth_) open_[keep++] = child;
    }
    open_.resize(keep);
  }

  void push(std::span<const int32_t> tokens) {
    for (int32_t t : tokens) push(t);
  }

  // The child of `node` for `token`, or -1.
  int32_t child(int32_t node, int32_t token) const {
    const auto it = edges_.find(edge(node, token));
    return it == edges_.end() ? -1 : it->second;
  }

  // The deepest node matching the end of `context` (at most max_length tokens) that has a
  // continuation, and the match's length; {0, 0} when none (the root).
  std::pair<int32_t, uint32_t> longest_match(std::span<const int32_t> context,
                                             uint32_t max_length) const {
    const size_t most = std::min<size_t>({context.size(), max_length, depth_ - 1});
    for (size_t m = most; m >= 1; --m) {
      int32_t n = 0;
      for (size_t i = context.size() - m; i < context.size() && n >= 0; ++i)
        n = child(n, context[i]);
      if (n > 0 && !nodes_[static_cast<size_t>(n)].children.empty())
        return {n, static_cast<uint32_t>(m)};
    }
    return {0, 0};
  }

 private:
  // Lookups go through one hash of (node, token): the root alone may have as many children
  // as the vocabulary has tokens.
  static uint64_t edge(int32_t node, int32_t token) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 32) |
           static_cast<uint32_t>(token);
  }

  int32_t child_or_add(int32_t node, int32_t token) {
    const auto [it, added] = edges_.try_emplace(edge(node, token), 0);
    if (!added) return it->second;
    const int32_t id = static_cast<int32_t>(nodes_.size());
    it->second = id;
    nodes_.push_back(Node{token, 0, {}});
    nodes_[static_cast<size_t>(node)].children.emplace_back(token, id);
    return id;
  }

  uint32_t depth_;
  std::vector<Node> nodes_;                      // [0] is the root
  std::unordered_map<uint64_t, int32_t> edges_;  // (node, token) -> child
  std::vector<int32_t> open_;                    // nodes of the windows still growing, oldest first
};

}  // namespace specd::strategies
