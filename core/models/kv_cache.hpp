// Per-sequence key/value cache of a LlamaModel: for each layer a K and a V buffer of
// [capacity, n_head_kv * head_dim] f32 rows on the model's device, kv_row_bytes apart
// (models/kv_layout.hpp).
//
// Rows [0, size()) are committed: the sequence in order. A forward of m tokens writes rows
// [size(), size() + m) (pending); commit() keeps the pending rows of an accepted path,
// moved into sequence order right after the committed rows, and drops the rest.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"

namespace specd {

class KvCache {
 public:
  int32_t size() const { return committed_; }  // committed rows
  int32_t pending() const { return static_cast<int32_t>(parents_.size()); }
  int32_t capacity() const { return capacity_; }  // most rows, committed plus pending

 private:
  friend class LlamaModel;
  KvCache() = default;
  int32_t capacity_ = 0;
  int32_t committed_ = 0;
  std::vector<int32_t> parents_;  // of the pending rows, as given to forward
  std::vector<Buffer> k_, v_;     // per layer
  Buffer index_;                  // int32 row indices for compaction
};

}  // namespace specd
