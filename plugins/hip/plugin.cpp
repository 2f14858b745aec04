// The HIP backend plugin: the shared GPU device (plugins/gpu_common) built with hipcc; its own
// GEMM kernel for every m (no vendor BLAS on Debian).
#include "../gpu_common/gpu_device.hpp"
#include "specd/cpp/backend.hpp"

SPECD_BACKEND_PLUGIN(specd::gpu::GpuDevice, "org.specd.backend.hip", "hip", "0.1.0",
                     "HIP (AMD): batch-invariant kernels for every m", 0)
