#include "batching/round_share.hpp"

#include <algorithm>

namespace specd::batching {

std::vector<bool> hold_costly_rounds(std::span<const RoundCost> sequences, double pass_s) {
  const size_t n = sequences.size();
  std::vector<bool> held(n, false);
  const double threshold = std::max(pass_s, kCostlyFloorSeconds);
  size_t costly = 0, turn = n;
  for (size_t i = 0; i < n; ++i) {
    if (sequences[i].round_s <= threshold) continue;
    ++costly;
    held[i] = true;
    // Its turn: the longest waiting; among equals, the first.
    if (turn == n || sequences[i].waited > sequences[turn].waited) turn = i;
  }
  if (costly == n) return std::vector<bool>(n, false);
  if (turn < n) held[turn] = false;
  return held;
}

}  // namespace specd::batching
