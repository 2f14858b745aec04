// Large-m GEMM (prefill, m > kInvariantRows) through cuBLAS SGEMM in FP32 (no TF32, whose
// 10-bit mantissa would miss the conformance tolerance). f16/bf16/quantized weights are decoded to
// f32 in panels of rows first. Row-major y[m, n] = x[m, k] · w[n, k]ᵀ is, column-major,
// yᶜ[n, m] = (wᶜ[k, n])ᵀ · xᶜ[k, m].
#include <climits>

#include "../gpu_common/check.hpp"
#include "../gpu_common/launch.hpp"
#include "../gpu_common/numeric.hpp"
#include "../gpu_common/vendor.hpp"
#include "cublas_check.hpp"

namespace specd::gpu {
namespace {

constexpr uint64_t kPanelBytes = 64ull << 20;  // decoded weight panel, at most

int as_int(int64_t v, const char* what) {
  if (v > INT_MAX)
    throw sdk::PluginError(SPECD_STATUS_UNSUPPORTED,
                           std::string("matmul: ") + what + " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

}  // namespace

struct LargeGemm::Impl {
  cublasHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
};

LargeGemm::LargeGemm(cudaStream_t stream) : impl_(std::make_unique<Impl>()) {
  impl_->stream = stream;
  SPECD_CUBLAS_CHECK(cublasCreate(&impl_->handle));
  try {
    SPECD_CUBLAS_CHECK(cublasSetStream(impl_->handle, stream));
    SPECD_CUBLAS_CHECK(cublasSetMathMode(impl_->handle, CUBLAS_DEFAULT_MATH));
  } catch (...) {
    static_cast<void>(cublasDestroy(impl_->handle));
    throw;
  }
}

LargeGemm::~LargeGemm() {
  // Not through the check macro: a destructor must not throw, and there is nothing to report.
  if (impl_->handle) static_cast<void>(cublasDestroy(impl_->handle));
}

void LargeGemm::run(const GemmArgs& a, Scratch& scratch) {
  const float one = 1.0f, zero = 0.0f;
  const int m = as_int(a.m, "m"), k = as_int(a.k, "k");
  const int ldx = as_int(a.ldx, "x row stride"), ldy = as_int(a.ldy, "y row stride");
  if (a.dtype == kF32 && a.ldw_bytes % 4 == 0) {
    SPECD_CUBLAS_CHECK(cublasSgemm(impl_->handle, CUBLAS_OP_T, CUBLAS_OP_N, as_int(a.n, "n"), m, k,
                                   &one, reinterpret_cast<const float*>(a.w),
                                   as_int(a.ldw_bytes / 4, "w row stride"), a.x, ldx, &zero, a.y,
                                   ldy));
    return;
  }
  int64_t panel_rows = static_cast<int64_t>(kPanelBytes / (static_cast<uint64_t>(a.k) * 4));
  if (panel_rows < 1) panel_rows = 1;
  if (panel_rows > a.n) panel_rows = a.n;
  auto* panel = static_cast<float*>(scratch.get(static_cast<uint64_t>(panel_rows * a.k) * 4));
  for (int64_t j0 = 0; j0 < a.n; j0 += panel_rows) {
    const int64_t nc = a.n - j0 < panel_rows ? a.n - j0 : panel_rows;
    SPECD_GPU_CHECK(launch_decode_rows(a, j0, nc, panel, impl_->stream));
    SPECD_CUBLAS_CHECK(cublasSgemm(impl_->handle, CUBLAS_OP_T, CUBLAS_OP_N, as_int(nc, "n"), m, k,
                                   &one, panel, k, a.x, ldx, &zero, a.y + j0, ldy));
  }
}

}  // namespace specd::gpu
