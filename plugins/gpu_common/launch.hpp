// Kernel launchers (defined in the *.cuh kernel sources, compiled by nvcc or hipcc). Each
// returns the launch status, which the caller passes through SPECD_GPU_CHECK. All run on
// `stream`, asynchronously with the host.
#pragma once

#include "args.hpp"
#include "compat.hpp"

namespace specd::gpu {

// The batch-invariant GEMM (gemm.cuh): element (i, j) is one warp's fixed-order reduction
// over k, the same whatever m or the row's place in the batch. Any m.
cudaError_t launch_gemm_rows(const GemmArgs& a, cudaStream_t stream);
// Weight rows [row0, row0 + rows) decoded to packed f32 [rows, k] at `out`.
cudaError_t launch_decode_rows(const GemmArgs& a, int64_t row0, int64_t rows, float* out,
                               cudaStream_t stream);

// Row-wise ops (rowwise.cuh). Shapes were validated by the caller.
cudaError_t launch_rms_norm(const Mat& x, const float* weight, float eps, const Mat& y,
                            cudaStream_t stream);
cudaError_t launch_rope(const Mat& x, const RopeArgs& a, cudaStream_t stream);
cudaError_t launch_get_rows(const Mat& table, const int32_t* ids, const Mat& y,
                            cudaStream_t stream);
cudaError_t launch_swiglu(const Mat& gate, const Mat& up, const Mat& y, cudaStream_t stream);
// gpt-oss's clamped SwiGLU (backend.h, swiglu_oai); y may be gate or up.
cudaError_t launch_swiglu_oai(const Mat& gate, const Mat& up, float alpha, float limit,
                              const Mat& y, cudaStream_t stream);
// b is [m, n] or one row [1, n] added to every row.
cudaError_t launch_add(const Mat& a, const Mat& b, const Mat& y, cudaStream_t stream);
// dst[i] = src[indices[i]] bytewise; src and dst must not overlap (the device stages in-place
// compaction through a scratch buffer).
cudaError_t launch_copy_rows(const Mat& src, const int32_t* indices, const Mat& dst,
                             int64_t row_bytes, cudaStream_t stream);
// dst[indices[i]] = src[i] bytewise; an index outside dst sets *error (set_rows).
cudaError_t launch_set_rows(const Mat& src, const int32_t* indices, const Mat& dst,
                            int64_t row_bytes, int* error, cudaStream_t stream);
// The same with src f32 rows encoded as dst's f16 or q8_0 (ggml_blocks.hpp's encoders).
cudaError_t launch_set_rows_encoded(const Mat& src, const int32_t* indices, const Mat& dst,
                                    int* error, cudaStream_t stream);

// The gated DeltaNet layer (delta_net.cuh): convolution, L2 norms, recurrence; conv_kernel
// <= 9. y = x * sigmoid(gate).
cudaError_t launch_gated_delta_net(const DeltaNetArgs& a, cudaStream_t stream);
cudaError_t launch_mul_sigmoid(const Mat& x, const Mat& gate, const Mat& y, cudaStream_t stream);

// Attention (attention.cuh); head_dim <= kMaxHeadDim.
constexpr int kMaxHeadDim = 512;
cudaError_t launch_attention(const AttentionArgs& a, cudaStream_t stream);

}  // namespace specd::gpu
