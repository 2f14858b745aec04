// The CUDA backend plugin: the shared GPU device (plugins/gpu_common) built with nvcc, cuBLAS for
// prefill GEMM.
#include "../gpu_common/gpu_device.hpp"
#include "specd/cpp/backend.hpp"

SPECD_BACKEND_PLUGIN(specd::gpu::GpuDevice, "org.specd.backend.cuda", "cuda", "0.1.0",
                     "CUDA: batch-invariant kernels for m <= 64, cuBLAS SGEMM prefill", 0)
