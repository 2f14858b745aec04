// Can the CUDA backend run here? Without a GPU or driver, cudaGetDeviceCount fails ("CUDA
// driver version is insufficient for CUDA runtime version") and cublasCreate returns an error:
// both become a score of 0 with the reason, never a crash.
#include "../gpu_common/check.hpp"
#include "../gpu_common/vendor.hpp"
#include "cublas_check.hpp"

namespace specd::gpu {

const VendorInfo& vendor() {
  static const VendorInfo info{"org.specd.backend.cuda", "cuda"};
  return info;
}

uint32_t vendor_score(std::string& reason) {
  if (visible_devices("CUDA", reason) == 0) return 0;
  try {
    cublasHandle_t handle = nullptr;
    SPECD_CUBLAS_CHECK(cublasCreate(&handle));
    SPECD_CUBLAS_CHECK(cublasDestroy(handle));
  } catch (const std::exception& e) {
    reason = std::string("cuBLAS unavailable: ") + e.what();
    return 0;
  }
  reason.clear();
  return 100;
}

}  // namespace specd::gpu
