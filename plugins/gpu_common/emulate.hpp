// A host emulation of the CUDA subset the kernels and the device use, so the kernel sources can
// run (slowly) on a machine without a GPU: the SPECD_GPU_EMULATOR build. Blocks run one after
// another; the threads of a block are fibers of one host thread (emulate.cpp), switched at
// __syncthreads and warp shuffles. Shared arrays are function statics (blocks never overlap).
// Runtime calls act on host memory and complete immediately. Single-threaded: one device only.
#pragma once

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <functional>

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace specd::gpu::emu {

struct ThreadContext {
  dim3 thread_idx, block_idx, block_dim, grid_dim;
  void* dynamic_shared = nullptr;
};

ThreadContext& ctx();
void sync_threads();
float shfl_xor(float v, int mask);
void run_grid(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& body);

template <class Kernel>
auto launcher(dim3 grid, dim3 block, size_t shared_bytes, Kernel kernel) {
  return [=](auto... args) { run_grid(grid, block, shared_bytes, [&] { kernel(args...); }); };
}

}  // namespace specd::gpu::emu

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define threadIdx (::specd::gpu::emu::ctx().thread_idx)
#define blockIdx (::specd::gpu::emu::ctx().block_idx)
#define blockDim (::specd::gpu::emu::ctx().block_dim)
#define gridDim (::specd::gpu::emu::ctx().grid_dim)
#define __syncthreads() ::specd::gpu::emu::sync_threads()
#define SPECD_LAUNCH(grid, block, smem, stream, ...) \
  ::specd::gpu::emu::launcher(dim3(grid), dim3(block), smem, __VA_ARGS__)
#define SPECD_DYNAMIC_SHARED(type, name) \
  type* name = static_cast<type*>(::specd::gpu::emu::ctx().dynamic_shared)

inline int atomicExch(int* p, int v) {
  return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}

// ---- Runtime API subset ------------------------------------------------------------------
using cudaError_t = int;
using cudaStream_t = void*;
constexpr cudaError_t cudaSuccess = 0;
constexpr cudaError_t cudaErrorMemoryAllocation = 2;
constexpr unsigned cudaStreamNonBlocking = 1;
enum cudaMemcpyKind {
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3
};
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int multiProcessorCount;
};

inline const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "out of memory (emulated)";
}
inline cudaError_t cudaGetLastError() {
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int) {
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  memset(p, 0, sizeof(*p));
  strcpy(p->name, "host emulation");
  p->multiProcessorCount = 1;
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) {
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return cudaSuccess;
}
inline cudaError_t cudaMalloc(void** p, size_t n) {
  *p = aligned_alloc(256, (n + 255) / 256 * 256);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFree(void* p) {
  free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t) {
  memcpy(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* d, size_t dpitch, const void* s, size_t spitch,
                                     size_t width, size_t height, cudaMemcpyKind, cudaStream_t) {
  for (size_t r = 0; r < height; ++r)
    memcpy(static_cast<char*>(d) + r * dpitch, static_cast<const char*>(s) + r * spitch, width);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t) {
  memset(d, v, n);
  return cudaSuccess;
}
