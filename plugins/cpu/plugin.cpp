// The CPU backend plugin: oneDNN for large m, batch-invariant kernels for m <= 64.
#include "cpu_device.hpp"
#include "specd/cpp/backend.hpp"

SPECD_BACKEND_PLUGIN(specd::cpu::CpuDevice, "org.specd.backend.cpu", "cpu", "0.1.0",
                     "CPU: batch-invariant small-m kernels (AVX-512 or portable), oneDNN prefill",
                     SPECD_BACKEND_HOST_MEMORY)
