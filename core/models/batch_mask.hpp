// The attention mask of a forward batch (backend.h, specd_attention_mask) from the parent
// of each row: row i attends the committed prefix and its ancestors in the batch, in order,
// then itself. Leading ancestors that are batch rows 0, 1, .., j-1 (a chain from the prefix)
// are folded into the prefix length, so a plain chain needs no extra slots at all.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace specd {

struct BatchMask {
  std::vector<int32_t> prefix_len;   // [m]
  std::vector<int32_t> extra_begin;  // [m + 1]
  std::vector<int32_t> extra_slots;  // [extra_begin[m]] cache rows
  std::vector<int32_t> depth;        // [m] ancestors of row i within the batch
};

// parents[i] in [-1, i): the batch row of i's parent, -1 for a child of the last committed
// row. Rows are appended at cache rows n_committed + i. Throws specd::Error on bad parents.
BatchMask build_batch_mask(int32_t n_committed, std::span<const int32_t> parents);

}  // namespace specd
