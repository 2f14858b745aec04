// The GPU backends' kernels and device run on the host (emulate.hpp): a test tool for checking
// kernel logic with the backend conformance suite where there is no GPU.
#include "../gpu_device.hpp"
#include "specd/cpp/backend.hpp"

SPECD_BACKEND_PLUGIN(specd::gpu::GpuDevice, "org.specd.backend.gpu-emulator", "gpu-emulator",
                     "0.1.0", "GPU kernels emulated on the host (tests only; very slow)", 0)
