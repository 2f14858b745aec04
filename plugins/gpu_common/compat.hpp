// One source for two vendors: kernels and host code use the CUDA runtime names; for HIP
// (hipcc, or g++ for host-only files) this header maps the few names used to their HIP
// equivalents, as ggml-hip and CTranslate2 do. Device helpers that differ between the two
// (warp shuffles: HIP wavefronts are 64 wide) are wrapped here too.
#pragma once

#if defined(SPECD_GPU_EMULATE)
// Kernels and runtime calls emulated on the host (emulate.hpp), to test the kernel logic
// without a GPU.
#include "emulate.hpp"
#define SPECD_GPU_API "emulated"
#elif defined(SPECD_GPU_NO_RUNTIME)
// Host-only unit tests of numeric.hpp: no vendor runtime needed.
#define SPECD_GPU_API "none"
#elif defined(SPECD_GPU_HIP)
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#else
#include <hip/hip_runtime_api.h>
#endif
#define cudaDeviceProp hipDeviceProp_t
#define cudaError_t hipError_t
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaFree hipFree
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaMalloc hipMalloc
#define cudaMemcpy2DAsync hipMemcpy2DAsync
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemsetAsync hipMemsetAsync
#define cudaSetDevice hipSetDevice
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStream_t hipStream_t
#define cudaSuccess hipSuccess
#define SPECD_GPU_API "HIP"
#else
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#include <cuda_runtime_api.h>
#endif
#define SPECD_GPU_API "CUDA"
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#ifndef SPECD_HD
#define SPECD_HD __host__ __device__
#endif
#else
#define SPECD_HD
#endif

// Kernel launch and dynamically sized shared memory, spelled so the emulator can replace them.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define SPECD_LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<grid, block, smem, stream>>>
#define SPECD_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(SPECD_GPU_EMULATE)
namespace specd::gpu {

// Kernels reason in logical warps of 32 lanes on both vendors, so a reduction has the same
// shape (and the same rounding) whatever the hardware wavefront width.
constexpr int kLanes = 32;

__device__ inline float shfl_xor(float v, int mask) {
#if defined(SPECD_GPU_EMULATE)
  return emu::shfl_xor(v, mask);
#elif defined(SPECD_GPU_HIP)
  return __shfl_xor(v, mask, kLanes);
#else
  return __shfl_xor_sync(0xffffffffu, v, mask, kLanes);
#endif
}

// Sum over the 32 lanes of a logical warp in a fixed butterfly order: the result is a fixed
// function of the 32 inputs (every lane ends with the same bits, addition being commutative).
__device__ inline float warp_sum(float v) {
  for (int mask = kLanes / 2; mask > 0; mask /= 2) v += shfl_xor(v, mask);
  return v;
}

}  // namespace specd::gpu
#endif
