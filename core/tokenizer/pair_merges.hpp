// The merge loop that BPE and SentencePiece share: a word's symbols as a linked list, and
// the best queued pair of neighbours merged until none is left.
#pragma once

#include <cstddef>
#include <vector>

namespace specd {

// A run of the word's units (bytes or characters); len 0 once merged into its left neighbour.
struct MergeSymbol {
  int prev;
  int next;  // -1 at the end
  size_t start;
  size_t len;
};

// Merges neighbours of sym in the order of queue (a priority queue of pairs with members
// left, right and len: the symbols and their length when queued), skipping stale entries.
// try_add(left, right) queues the pair of those symbols if the vocabulary can merge it; it
// is called for every neighbouring pair at the start and for the two new pairs after each
// merge.
template <class Queue, class TryAdd>
void merge_pairs(std::vector<MergeSymbol>& sym, Queue& queue, TryAdd try_add) {
  for (size_t k = 1; k < sym.size(); ++k) try_add(static_cast<int>(k) - 1, static_cast<int>(k));
  while (!queue.empty()) {
    const auto b = queue.top();
    queue.pop();
    MergeSymbol& l = sym[b.left];
    MergeSymbol& r = sym[b.right];
    // Stale entries: one side was merged away or grew since the pair was queued.
    if (l.len == 0 || r.len == 0 || l.next != b.right || l.len + r.len != b.len) continue;
    l.len += r.len;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = b.left;
    r.len = 0;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }
}

}  // namespace specd
