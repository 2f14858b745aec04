// The emulator backend runs only when asked for (SPECD_GPU_EMULATOR=1 in the environment), so
// `backend = "auto"` never picks a slow test tool.
#include <cstdlib>
#include <cstring>

#include "../vendor.hpp"

namespace specd::gpu {

const VendorInfo& vendor() {
  static const VendorInfo info{"org.specd.backend.gpu-emulator", "gpu-emulator"};
  return info;
}

uint32_t vendor_score(std::string& reason) {
  const char* env = std::getenv("SPECD_GPU_EMULATOR");
  if (!env || std::strcmp(env, "1") != 0) {
    reason = "a test tool: set SPECD_GPU_EMULATOR=1 to run the GPU kernels emulated on the host";
    return 0;
  }
  reason.clear();
  return 1;
}

}  // namespace specd::gpu
