// The gated DeltaNet layer (backend.h, gated_delta_net) and the sigmoid-gated product. Three
// kernels in sequence on the stream: the causal convolution (one thread per channel, rows in
// order, states through the slots), the L2 norm of each row's q and k heads (one block each),
// and the recurrence (one block per value head, one thread per value row of its state, rows in
// order). Every value is one thread's fixed sequence of operations: batch invariant.
// Semantics mirror plugins/cpu/ops/delta_net.cpp.
#include <math.h>

#include "launch.hpp"

namespace specd::gpu {
namespace {

constexpr int kNormThreads = 128;  // threads per L2-normed head (a power of two)

__device__ inline float* f32_at(const Mat& a, int64_t i) {
  return reinterpret_cast<float*>(a.p + i * a.stride_bytes);
}

__device__ inline float sigmoid_f(float x) {
  return 1.0f / (1.0f + expf(-x));
}

__global__ void delta_conv_kernel(DeltaNetArgs a) {
  const int64_t C = a.qkv.cols, K = a.conv_kernel;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= C) return;
  float window[8];  // K - 1 taps, oldest first (K <= 9)
  for (int64_t t = 0; t + 1 < K; ++t) window[t] = 0.0f;
  const float* w = f32_at(a.conv_weight, j);
  for (int64_t i = 0; i < a.m; ++i) {
    if (a.state_in[i] >= 0) {
      const float* s = f32_at(a.conv_states, a.state_in[i]);
      for (int64_t t = 0; t + 1 < K; ++t) window[t] = s[t * C + j];
    }
    const float x = f32_at(a.qkv, i)[j];
    float sum = 0.0f;
    for (int64_t t = 0; t + 1 < K; ++t) sum += window[t] * w[t];
    sum += x * w[K - 1];
    a.c[i * C + j] = sum / (1.0f + expf(-sum));
    for (int64_t t = 0; t + 2 < K; ++t) window[t] = window[t + 1];
    window[K - 2] = x;
    if (a.state_out[i] >= 0) {
      float* s = f32_at(a.conv_states, a.state_out[i]);
      for (int64_t t = 0; t + 1 < K; ++t) s[t * C + j] = window[t];
    }
  }
}

// Block (row i, head g of the 2 H_k q and k heads): x / max(||x||, eps) in place.
__global__ void delta_l2_kernel(DeltaNetArgs a) {
  __shared__ double partial[kNormThreads];
  const int64_t heads = 2 * a.n_key_heads, S = a.head_dim;
  const int64_t i = blockIdx.x / heads, g = blockIdx.x % heads;
  float* x = a.c + i * a.qkv.cols + g * S;
  const int t = static_cast<int>(threadIdx.x);
  double sum = 0.0;
  for (int64_t j = t; j < S; j += kNormThreads) sum += static_cast<double>(x[j] * x[j]);
  partial[t] = sum;
  __syncthreads();
  for (int w = kNormThreads / 2; w > 0; w /= 2) {
    if (t < w) partial[t] += partial[t + w];
    __syncthreads();
  }
  const float scale = 1.0f / fmaxf(sqrtf(static_cast<float>(partial[0])), a.eps);
  for (int64_t j = t; j < S; j += kNormThreads) x[j] *= scale;
}

// Block h (a value head), thread y (a value column of its state: element x S + y of the slot and
// of `work`, so neighbouring threads read neighbouring floats).
__global__ void delta_recurrence_kernel(DeltaNetArgs a) {
  const int64_t h = blockIdx.x, S = a.head_dim, C = a.qkv.cols, Hk = a.n_key_heads;
  const int64_t kh = h % Hk;
  float* work = a.work + h * S * S;  // element (x, y) at x * S + y
  const float scale = 1.0f / sqrtf(static_cast<float>(S));
  const float dt = f32_at(a.dt_bias, 0)[h], decay_rate = f32_at(a.a, 0)[h];
  for (int64_t y = threadIdx.x; y < S; y += blockDim.x) {
    for (int64_t i = 0; i < a.m; ++i) {
      if (a.state_in[i] >= 0) {
        const float* s = f32_at(a.ssm_states, a.state_in[i]) + h * S * S;
        for (int64_t x = 0; x < S; ++x) work[x * S + y] = s[x * S + y];
      }
      const float* row = a.c + i * C;
      const float* q = row + kh * S;
      const float* k = row + Hk * S + kh * S;
      const float v = row[2 * Hk * S + h * S + y];
      const float z = f32_at(a.alpha, i)[h] + dt;
      const float softplus = z > 20.0f ? z : log1pf(expf(z));
      const float decay = expf(softplus * decay_rate);
      const float beta = sigmoid_f(f32_at(a.beta, i)[h]);
      float dot = 0.0f;
      for (int64_t x = 0; x < S; ++x) {
        const float m = work[x * S + y] * decay;
        work[x * S + y] = m;
        dot += m * k[x];
      }
      const float d = (v - dot) * beta;
      float o = 0.0f;
      for (int64_t x = 0; x < S; ++x) {
        const float m = work[x * S + y] + k[x] * d;
        work[x * S + y] = m;
        o += m * q[x];
      }
      f32_at(a.out, i)[h * S + y] = o * scale;
      if (a.state_out[i] >= 0) {
        float* s = f32_at(a.ssm_states, a.state_out[i]) + h * S * S;
        for (int64_t x = 0; x < S; ++x) s[x * S + y] = work[x * S + y];
      }
    }
  }
}

__global__ void mul_sigmoid_kernel(Mat x, Mat gate, Mat y) {
  const int64_t total = x.rows * x.cols;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = e / x.cols, c = e % x.cols;
    f32_at(y, i)[c] = f32_at(x, i)[c] * sigmoid_f(f32_at(gate, i)[c]);
  }
}

}  // namespace

cudaError_t launch_gated_delta_net(const DeltaNetArgs& a, cudaStream_t stream) {
  const unsigned channels = static_cast<unsigned>((a.qkv.cols + 127) / 128);
  SPECD_LAUNCH(channels, 128, 0, stream, delta_conv_kernel)(a);
  SPECD_LAUNCH(static_cast<unsigned>(a.m * 2 * a.n_key_heads), kNormThreads, 0, stream,
               delta_l2_kernel)
  (a);
  const unsigned threads = static_cast<unsigned>(a.head_dim < 256 ? a.head_dim : 256);
  SPECD_LAUNCH(static_cast<unsigned>(a.n_value_heads), threads, 0, stream, delta_recurrence_kernel)
  (a);
  return cudaGetLastError();
}

cudaError_t launch_mul_sigmoid(const Mat& x, const Mat& gate, const Mat& y, cudaStream_t stream) {
  const int64_t total = x.rows * x.cols;
  const int64_t blocks = (total + 255) / 256;
  SPECD_LAUNCH(static_cast<unsigned>(blocks < 65535 ? (blocks < 1 ? 1 : blocks) : 65535), 256, 0,
               stream, mul_sigmoid_kernel)
  (x, gate, y);
  return cudaGetLastError();
}

}  // namespace specd::gpu
