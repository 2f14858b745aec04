// What differs between the CUDA and HIP plugins, defined once in each plugin's folder: how to
// tell whether the backend can run here, and the GEMM path for large m (prefill).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "args.hpp"
#include "compat.hpp"
#include "scratch.hpp"

namespace specd::gpu {

// Largest m with the batch-invariance contract; above it LargeGemm may round differently.
constexpr int64_t kInvariantRows = 64;

struct VendorInfo {
  const char* id;    // plugin id, for log messages
  const char* name;  // short backend name, e.g. "cuda"
};
const VendorInfo& vendor();

// 0 with a reason when there is no usable device or library; never throws for a missing
// device or driver.
uint32_t vendor_score(std::string& reason);

class LargeGemm {
 public:
  explicit LargeGemm(cudaStream_t stream);
  ~LargeGemm();
  LargeGemm(const LargeGemm&) = delete;
  LargeGemm& operator=(const LargeGemm&) = delete;
  // y = x · wᵀ for m > kInvariantRows; `scratch` holds decoded weight panels if needed.
  void run(const GemmArgs& a, Scratch& scratch);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace specd::gpu
