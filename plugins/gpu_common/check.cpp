#include "check.hpp"

#include "specd/cpp/host.hpp"

namespace specd::gpu {
namespace {

// "cudaMalloc(&p, n)" -> "cudaMalloc" ("hipMalloc" in the HIP build, whose sources spell the
// CUDA names): the function name is what a user can look up.
std::string call_name(const char* what) {
  std::string s(what);
  const size_t paren = s.find('(');
  if (paren != std::string::npos) s.resize(paren);
#if defined(SPECD_GPU_HIP)
  if (s.rfind("cuda", 0) == 0) s.replace(0, 4, "hip");
#endif
  return s;
}

}  // namespace

void check_call(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  const specd_status_code code =
      error == cudaErrorMemoryAllocation ? SPECD_STATUS_OUT_OF_MEMORY : SPECD_STATUS_UNAVAILABLE;
  throw sdk::PluginError(code, call_name(what) + ": " + cudaGetErrorString(error));
}

std::string check_call_noexcept(cudaError_t error, const char* what) noexcept {
  if (error == cudaSuccess) return {};
  try {
    return call_name(what) + ": " + cudaGetErrorString(error);
  } catch (...) {
    return "error";
  }
}

int visible_devices(const char* api, std::string& reason) {
  int count = 0;
  try {
    SPECD_GPU_CHECK(cudaGetDeviceCount(&count));
  } catch (const std::exception& e) {
    reason = std::string("no ") + api + " device: " + e.what();
    return 0;
  }
  if (count <= 0) reason = std::string("no ") + api + " device: none found";
  return count > 0 ? count : 0;
}

}  // namespace specd::gpu
