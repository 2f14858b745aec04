// Can the HIP backend run here? Without an AMD GPU, hipGetDeviceCount returns hipErrorNoDevice:
// a score of 0 with the reason, never a crash.
#include "../gpu_common/check.hpp"
#include "../gpu_common/vendor.hpp"

namespace specd::gpu {

const VendorInfo& vendor() {
  static const VendorInfo info{"org.specd.backend.hip", "hip"};
  return info;
}

uint32_t vendor_score(std::string& reason) {
  if (visible_devices("HIP", reason) == 0) return 0;
  reason.clear();
  return 90;
}

}  // namespace specd::gpu
