// Batch-invariant GEMM kernel y[m, n] = x[m, k] · w[n, k]ᵀ (f32 activations, f32/f16/bf16 or
// block-quantized weights), compiled by nvcc (plugins/cuda) and hipcc (plugins/hip).
//
// One logical warp owns one output column j. Lane l accumulates, for each of the block's rows,
// the terms k = l, l + 32, l + 64, ... in increasing k with explicit fmaf; the 32 lane sums are
// then added in a fixed butterfly. So element (i, j) is a fixed function of x[i, :] and w[j, :]
// only: the row tile (MR), m and the row's place in the batch decide which elements share a
// weight load, never an element's arithmetic. Weights are read once per tile of MR rows.
#include "launch.hpp"
#include "numeric.hpp"

namespace specd::gpu {
namespace {

constexpr int kGemmWarps = 8;  // output columns per block

template <uint32_t DT, int MR>
__global__ void gemm_rows_kernel(GemmArgs a) {
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kGemmWarps + threadIdx.x / kLanes;
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * MR;
  if (j >= a.n) return;  // whole warps only; no block-wide barrier below
  const int64_t left = a.m - i0;
  const int rows = left < MR ? static_cast<int>(left) : MR;
  const uint8_t* w = a.w + j * a.ldw_bytes;
  const float* x = a.x + i0 * a.ldx;
  float acc[MR];
#pragma unroll
  for (int r = 0; r < MR; ++r) acc[r] = 0.0f;
    // Unrolling keeps several weight loads in flight; each accumulator's chain stays in order.
#pragma unroll 4
  for (int64_t c = lane; c < a.k; c += kLanes) {
    const float wv = load_element<DT>(w, c);
#pragma unroll
    for (int r = 0; r < MR; ++r)
      if (r < rows) acc[r] = fmaf(x[r * a.ldx + c], wv, acc[r]);
  }
#pragma unroll
  for (int r = 0; r < MR; ++r) {
    if (r < rows) {  // uniform across the warp
      const float s = warp_sum(acc[r]);
      if (lane == 0) a.y[(i0 + r) * a.ldy + j] = s;
    }
  }
}

template <uint32_t DT>
__global__ void decode_rows_kernel(GemmArgs a, int64_t row0, int64_t rows, float* out) {
  const int64_t total = rows * a.k;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = e / a.k, c = e % a.k;
    out[e] = load_element<DT>(a.w + (row0 + r) * a.ldw_bytes, c);
  }
}

template <uint32_t DT>
cudaError_t gemm_rows_dt(const GemmArgs& a, cudaStream_t stream) {
  const dim3 block(kGemmWarps * kLanes);
  const unsigned cols = static_cast<unsigned>((a.n + kGemmWarps - 1) / kGemmWarps);
  // Row tile: few registers for decode (m = 1), 16 accumulators otherwise.
  if (a.m == 1) {
    SPECD_LAUNCH(dim3(cols, 1), block, 0, stream, gemm_rows_kernel<DT, 1>)(a);
  } else if (a.m <= 4) {
    SPECD_LAUNCH(dim3(cols, 1), block, 0, stream, gemm_rows_kernel<DT, 4>)(a);
  } else {
    const unsigned tiles = static_cast<unsigned>((a.m + 15) / 16);
    SPECD_LAUNCH(dim3(cols, tiles), block, 0, stream, gemm_rows_kernel<DT, 16>)(a);
  }
  return cudaGetLastError();
}

unsigned grid_for(int64_t total, int threads) {
  const int64_t blocks = (total + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks < 1 ? 1 : blocks) : 65535);
}

}  // namespace

cudaError_t launch_gemm_rows(const GemmArgs& a, cudaStream_t stream) {
  cudaError_t err = cudaSuccess;
  visit_weight_dtype(a.dtype, [&](auto dt) { err = gemm_rows_dt<decltype(dt)::value>(a, stream); });
  return err;
}

cudaError_t launch_decode_rows(const GemmArgs& a, int64_t row0, int64_t rows, float* out,
                               cudaStream_t stream) {
  const unsigned grid = grid_for(rows * a.k, 256);
  visit_weight_dtype(a.dtype, [&](auto dt) {
    SPECD_LAUNCH(grid, 256, 0, stream, decode_rows_kernel<decltype(dt)::value>)(a, row0, rows, out);
  });
  return cudaGetLastError();
}

}  // namespace specd::gpu
