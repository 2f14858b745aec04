// Large-m GEMM where there is no vendor BLAS (HIP: Debian ships no hipBLAS/rocBLAS; the host
// emulator): every m runs the batch-invariant kernel of gemm.cuh (row tiles of 16 over the
// grid), slower than a vendor library for prefill but exact to the same contract for all m.
#include "check.hpp"
#include "launch.hpp"
#include "vendor.hpp"

namespace specd::gpu {

struct LargeGemm::Impl {
  cudaStream_t stream = nullptr;
};

LargeGemm::LargeGemm(cudaStream_t stream) : impl_(std::make_unique<Impl>()) {
  impl_->stream = stream;
}

LargeGemm::~LargeGemm() = default;

void LargeGemm::run(const GemmArgs& a, Scratch&) {
  SPECD_GPU_CHECK(launch_gemm_rows(a, impl_->stream));
}

}  // namespace specd::gpu
