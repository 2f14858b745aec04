#include "scratch.hpp"

#include "check.hpp"

namespace specd::gpu {

Scratch::~Scratch() {
  if (data_) {
    SPECD_GPU_CHECK_NOEXCEPT(cudaStreamSynchronize(stream_));
    SPECD_GPU_CHECK_NOEXCEPT(cudaFree(data_));
  }
}

void* Scratch::get(uint64_t bytes) {
  if (bytes <= size_) return data_;
  if (data_) {
    SPECD_GPU_CHECK(cudaStreamSynchronize(stream_));
    SPECD_GPU_CHECK(cudaFree(data_));
    data_ = nullptr;
    size_ = 0;
  }
  const uint64_t rounded = (bytes + (1u << 20) - 1) / (1u << 20) * (1u << 20);
  SPECD_GPU_CHECK(cudaMalloc(&data_, rounded));
  size_ = rounded;
  return data_;
}

}  // namespace specd::gpu
