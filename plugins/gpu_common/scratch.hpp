// Device scratch memory reused across ops (decoded weight panels, staged row copies), grown on
// demand. Growing waits for the stream first, since queued ops may still use the old block.
#pragma once

#include <cstdint>

#include "compat.hpp"

namespace specd::gpu {

class Scratch {
 public:
  explicit Scratch(cudaStream_t stream) : stream_(stream) {}
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // At least `bytes` of device memory, valid until the next get().
  void* get(uint64_t bytes);

 private:
  cudaStream_t stream_;
  void* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace specd::gpu
