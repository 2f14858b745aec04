#include "models/batch_mask.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"

namespace specd {

BatchMask build_batch_mask(int32_t n_committed, std::span<const int32_t> parents) {
  const int32_t m = static_cast<int32_t>(parents.size());
  BatchMask b;
  b.prefix_len.resize(m);
  b.depth.resize(m);
  b.extra_begin.reserve(m + 1);
  b.extra_begin.push_back(0);
  std::vector<int32_t> path;
  for (int32_t i = 0; i < m; ++i) {
    if (parents[i] < -1 || parents[i] >= i)
      throw Error("forward: parents[" + std::to_string(i) + "] = " + std::to_string(parents[i]) +
                  " must be -1 or an earlier row");
    path.clear();
    for (int32_t a = i; a >= 0; a = parents[a]) path.push_back(a);
    std::reverse(path.begin(), path.end());  // root-most ancestor first, row i last
    b.depth[i] = static_cast<int32_t>(path.size()) - 1;
    size_t lead = 0;
    while (lead < path.size() && path[lead] == static_cast<int32_t>(lead)) ++lead;
    b.prefix_len[i] = n_committed + static_cast<int32_t>(lead);
    for (size_t j = lead; j < path.size(); ++j) b.extra_slots.push_back(n_committed + path[j]);
    b.extra_begin.push_back(static_cast<int32_t>(b.extra_slots.size()));
  }
  return b;
}

}  // namespace specd
