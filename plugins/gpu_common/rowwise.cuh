// Row-wise kernels: every output row is computed from its own input row by one block (or, for
// elementwise ops, each element by one thread) in a fixed order, so results do not depend on
// m or the row's place in the batch. Semantics mirror plugins/cpu/ops/ops.cpp.
#include <math.h>

#include "launch.hpp"
#include "numeric.hpp"

namespace specd::gpu {
namespace {

constexpr int kRowThreads = 256;  // threads per row for reductions (a power of two)

unsigned grid_1d(int64_t total, int threads) {
  const int64_t blocks = (total + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks < 1 ? 1 : blocks) : 65535);
}

__device__ inline float* f32_row(const Mat& a, int64_t i) {
  return reinterpret_cast<float*>(a.p + i * a.stride_bytes);
}

// Block-wide sum of one value per thread, in a fixed tree order; every thread gets the result.
__device__ float block_sum(float v, float* scratch) {
  const int t = static_cast<int>(threadIdx.x);
  scratch[t] = v;
  __syncthreads();
  for (int w = kRowThreads / 2; w > 0; w /= 2) {
    if (t < w) scratch[t] += scratch[t + w];
    __syncthreads();
  }
  const float r = scratch[0];
  __syncthreads();  // scratch may be reused right after
  return r;
}

__global__ void rms_norm_kernel(Mat x, const float* weight, float eps, Mat y) {
  __shared__ float scratch[kRowThreads];
  const int64_t i = blockIdx.x;
  const int64_t n = x.cols;
  const float* xi = f32_row(x, i);
  float* yi = f32_row(y, i);
  float ss = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += kRowThreads) ss = fmaf(xi[j], xi[j], ss);
  ss = block_sum(ss, scratch);  // all reads of xi end here, so y may equal x
  const float s = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  for (int64_t j = threadIdx.x; j < n; j += kRowThreads) yi[j] = (xi[j] * s) * weight[j];
}

// The angle of pair p from its unscaled (YaRN's extrapolated) angle theta_e: linear scaling
// alone, or with YaRN (ext_factor != 0) its mix with theta_e along the ramp (RopeArgs).
__device__ inline double rope_angle(double theta_e, int64_t p, const RopeArgs& a) {
  const double scale = static_cast<double>(a.freq_scale);
  if (a.ext_factor == 0.0) return theta_e * scale;
  double y = (static_cast<double>(p) - a.yarn_lo) / a.yarn_span;
  y = y < 0.0 ? 0.0 : (y > 1.0 ? 1.0 : y);
  const double ramp = a.ext_factor * (1.0 - y);
  return theta_e * scale * (1.0 - ramp) + theta_e * ramp;
}

// One thread per rotated pair (row i, head h, pair p); the angle in double as on the CPU, since
// f32 loses ~1e-5 relative accuracy at positions in the hundreds.
__global__ void rope_kernel(Mat x, RopeArgs a) {
  const int64_t half = a.n_rot / 2;
  const int64_t total = x.rows * a.n_head * half;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t p = e % half;
    const int64_t h = (e / half) % a.n_head;
    const int64_t i = e / (half * a.n_head);
    double theta = static_cast<double>(a.positions[i]) *
                   pow(static_cast<double>(a.base), -2.0 * static_cast<double>(p) / a.n_rot);
    if (a.freq_factors) theta /= static_cast<double>(a.freq_factors[p]);
    theta = rope_angle(theta, p, a);
    // mscale is exactly 1 without YaRN and attn_factor: the bits are 0.2's.
    const float cs = static_cast<float>(cos(theta) * a.mscale);
    const float sn = static_cast<float>(sin(theta) * a.mscale);
    float* v = f32_row(x, i) + h * a.head_dim;
    float* lo = a.neox ? v + p : v + 2 * p;
    float* hi = a.neox ? lo + half : lo + 1;
    const float x0 = *lo, x1 = *hi;
    *lo = x0 * cs - x1 * sn;
    *hi = x0 * sn + x1 * cs;
  }
}

template <uint32_t DT>
__global__ void get_rows_kernel(Mat table, const int32_t* ids, Mat y) {
  const int64_t total = y.rows * y.cols;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / y.cols, c = e % y.cols;
    f32_row(y, i)[c] = load_element<DT>(table.p + ids[i] * table.stride_bytes, c);
  }
}

__global__ void swiglu_kernel(Mat gate, Mat up, Mat y) {
  const int64_t total = gate.rows * gate.cols;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / gate.cols, c = e % gate.cols;
    const float g = f32_row(gate, i)[c];
    const float u = f32_row(up, i)[c];
    f32_row(y, i)[c] = g / (1.0f + expf(-g)) * u;
  }
}

// gpt-oss's clamped SwiGLU, one thread per element. The clamps are comparisons rather than
// fminf/fmaxf, which would turn a NaN input into the limit; as on the CPU, NaN stays NaN.
__global__ void swiglu_oai_kernel(Mat gate, Mat up, float alpha, float limit, Mat y) {
  const int64_t total = gate.rows * gate.cols;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / gate.cols, c = e % gate.cols;
    float g = f32_row(gate, i)[c];
    float u = f32_row(up, i)[c];
    g = limit < g ? limit : g;
    u = -limit > u ? -limit : u;
    u = limit < u ? limit : u;
    f32_row(y, i)[c] = g / (1.0f + expf(-(alpha * g))) * (u + 1.0f);
  }
}

__global__ void add_kernel(Mat a, Mat b, Mat y) {
  const int64_t total = a.rows * a.cols;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / a.cols, c = e % a.cols;
    f32_row(y, i)[c] = f32_row(a, i)[c] + f32_row(b, b.rows == 1 ? 0 : i)[c];
  }
}

// dst[i, :] = src[indices[i], :] bytewise, one thread per byte (rows of any dtype and size).
__global__ void copy_rows_kernel(Mat src, const int32_t* indices, Mat dst, int64_t row_bytes) {
  const int64_t total = dst.rows * row_bytes;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / row_bytes, b = e % row_bytes;
    dst.p[i * dst.stride_bytes + b] = src.p[indices[i] * src.stride_bytes + b];
  }
}

// dst[indices[i], :] = src[i, :] bytewise (set_rows); an index outside dst raises the error
// flag and its row is not written.
__global__ void set_rows_kernel(Mat src, const int32_t* indices, Mat dst, int64_t row_bytes,
                                int* error) {
  const int64_t total = src.rows * row_bytes;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / row_bytes, b = e % row_bytes;
    const int64_t to = indices[i];
    if (to < 0 || to >= dst.rows) {
      if (b == 0) atomicExch(error, 1);
      continue;
    }
    dst.p[to * dst.stride_bytes + b] = src.p[i * src.stride_bytes + b];
  }
}

// dst[indices[i], :] = src[i, :] encoded as dst's f16 (one thread per value) or q8_0 (one
// thread per 32-value block), with the SDK's encoders (ggml_blocks.hpp): the CPU backend's
// bits. An index outside dst raises the error flag and its row is not written.
__global__ void set_rows_encoded_kernel(Mat src, const int32_t* indices, Mat dst, int* error) {
  const bool q8 = dst.dtype == kQ8_0;
  const int64_t per_row = q8 ? src.cols / 32 : src.cols;
  const int64_t total = src.rows * per_row;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / per_row, c = e % per_row;
    const int64_t to = indices[i];
    if (to < 0 || to >= dst.rows) {
      if (c == 0) atomicExch(error, 1);
      continue;
    }
    const float* x = f32_row(src, i);
    uint8_t* row = dst.p + to * dst.stride_bytes;
    if (q8) {
      ggml::quantize_q8_0_block(x + 32 * c, row + 34 * c);
    } else {
      const uint16_t h = ggml::f32_to_f16(x[c]);
      row[2 * c] = static_cast<uint8_t>(h & 0xffu);
      row[2 * c + 1] = static_cast<uint8_t>(h >> 8);
    }
  }
}

}  // namespace

cudaError_t launch_rms_norm(const Mat& x, const float* weight, float eps, const Mat& y,
                            cudaStream_t stream) {
  SPECD_LAUNCH(static_cast<unsigned>(x.rows), kRowThreads, 0, stream, rms_norm_kernel)
  (x, weight, eps, y);
  return cudaGetLastError();
}

cudaError_t launch_rope(const Mat& x, const RopeArgs& a, cudaStream_t stream) {
  const int64_t total = x.rows * a.n_head * (a.n_rot / 2);
  SPECD_LAUNCH(grid_1d(total, 256), 256, 0, stream, rope_kernel)(x, a);
  return cudaGetLastError();
}

cudaError_t launch_get_rows(const Mat& table, const int32_t* ids, const Mat& y,
                            cudaStream_t stream) {
  const unsigned grid = grid_1d(y.rows * y.cols, 256);
  visit_weight_dtype(table.dtype, [&](auto dt) {
    SPECD_LAUNCH(grid, 256, 0, stream, get_rows_kernel<decltype(dt)::value>)(table, ids, y);
  });
  return cudaGetLastError();
}

cudaError_t launch_swiglu(const Mat& gate, const Mat& up, const Mat& y, cudaStream_t stream) {
  SPECD_LAUNCH(grid_1d(gate.rows * gate.cols, 256), 256, 0, stream, swiglu_kernel)(gate, up, y);
  return cudaGetLastError();
}

cudaError_t launch_swiglu_oai(const Mat& gate, const Mat& up, float alpha, float limit,
                              const Mat& y, cudaStream_t stream) {
  SPECD_LAUNCH(grid_1d(gate.rows * gate.cols, 256), 256, 0, stream, swiglu_oai_kernel)
  (gate, up, alpha, limit, y);
  return cudaGetLastError();
}

cudaError_t launch_add(const Mat& a, const Mat& b, const Mat& y, cudaStream_t stream) {
  SPECD_LAUNCH(grid_1d(a.rows * a.cols, 256), 256, 0, stream, add_kernel)(a, b, y);
  return cudaGetLastError();
}

cudaError_t launch_copy_rows(const Mat& src, const int32_t* indices, const Mat& dst,
                             int64_t row_bytes, cudaStream_t stream) {
  SPECD_LAUNCH(grid_1d(dst.rows * row_bytes, 256), 256, 0, stream, copy_rows_kernel)
  (src, indices, dst, row_bytes);
  return cudaGetLastError();
}

cudaError_t launch_set_rows(const Mat& src, const int32_t* indices, const Mat& dst,
                            int64_t row_bytes, int* error, cudaStream_t stream) {
  SPECD_LAUNCH(grid_1d(src.rows * row_bytes, 256), 256, 0, stream, set_rows_kernel)
  (src, indices, dst, row_bytes, error);
  return cudaGetLastError();
}

cudaError_t launch_set_rows_encoded(const Mat& src, const int32_t* indices, const Mat& dst,
                                    int* error, cudaStream_t stream) {
  const int64_t per_row = dst.dtype == kQ8_0 ? src.cols / 32 : src.cols;
  SPECD_LAUNCH(grid_1d(src.rows * per_row, 256), 256, 0, stream, set_rows_encoded_kernel)
  (src, indices, dst, error);
  return cudaGetLastError();
}

}  // namespace specd::gpu
