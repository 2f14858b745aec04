// KV cache of a head with a decoder block of its own (EAGLE, MTP) over the head's element
// sequence: [capacity, Hkv*hd] f32 K and V rows on the head's device.
//
// Rows [0, size()) are committed. Unlike KvCache, pending rows accumulate over forward
// calls (a draft tree grows one level per call) until commit or truncate.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"

namespace specd {

class HeadCache {
 public:
  int32_t size() const { return committed_; }
  int32_t pending() const { return static_cast<int32_t>(parents_.size()); }
  int32_t capacity() const { return capacity_; }

 private:
  friend class HeadModel;
  HeadCache() = default;
  int32_t capacity_ = 0;
  int32_t committed_ = 0;
  std::vector<int32_t> parents_;  // of every pending row, -1 = child of the committed prefix
  Buffer k_, v_;
  Buffer index_;  // int32 row indices for compaction
};

}  // namespace specd
