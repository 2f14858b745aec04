#include "ops/delta_net.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/vexp.hpp"

namespace specd::cpu {
namespace {

constexpr int kLanes = 16;

// Sum of a[j] * b[j] over 16 lanes (element j into lane j % 16, in order), then the lanes
// added pairwise: one fixed sequence of f32 operations however the clone vectorizes it (the
// plugin builds with -ffp-contract=off).
[[gnu::target_clones("avx512f", "avx2", "default")]] float dot_lanes(const float* a, const float* b,
                                                                     int64_t n) {
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += a[j + l] * b[j + l];
  for (int l = 0; j < n; ++j, ++l) acc[l] += a[j] * b[j];
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0];
}

// One value row of a head's state for one token (backend.h): row *= decay; d = beta (v -
// row . k); row += d k; returns row . q (before the 1 / sqrt(S) scale).
[[gnu::target_clones("avx512f", "avx2", "default")]] float update_row(float* row, float decay,
                                                                      const float* k,
                                                                      const float* q, float v,
                                                                      float beta, int64_t n) {
  for (int64_t x = 0; x < n; ++x) row[x] *= decay;
  const float d = (v - dot_lanes(row, k, n)) * beta;
  for (int64_t x = 0; x < n; ++x) row[x] += k[x] * d;
  return dot_lanes(row, q, n);
}

float silu(float x) {
  return x / (1.0f + exp_ref(-x));
}
float sigmoid(float x) {
  return 1.0f / (1.0f + exp_ref(-x));
}
float softplus(float x) {
  return x > 20.0f ? x : static_cast<float>(std::log1p(static_cast<double>(exp_ref(x))));
}

// x[0, n) scaled by 1 / max(||x||, eps), the sum of squares in double.
void l2_normalize(float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) sum += static_cast<double>(x[j] * x[j]);
  const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t j = 0; j < n; ++j) x[j] *= scale;
}

constexpr int64_t kConvChannels = 256;  // channels per convolution task

// Phase 1: the causal convolution and SiLU of every row into c [m, C], channel range by
// channel range; each row's window comes from its state_in slot or the row before, and goes
// to its state_out slot.
void convolve(ThreadPool& pool, const DeltaNetCall& call, float* c) {
  const int64_t m = call.qkv.rows, C = call.qkv.cols, K = call.p.conv_kernel;
  const int64_t tasks = (C + kConvChannels - 1) / kConvChannels;
  pool.run(tasks, [&](int64_t task) {
    const int64_t j0 = task * kConvChannels, n = std::min(kConvChannels, C - j0);
    float window[8 * kConvChannels];  // (K - 1) x n, oldest tap first; K <= 9 (checked)
    for (int64_t i = 0; i < m; ++i) {
      if (call.state_in[i] >= 0) {
        const float* s = call.conv_states.f32_row(call.state_in[i]);
        for (int64_t t = 0; t + 1 < K; ++t) std::memcpy(window + t * n, s + t * C + j0, n * 4);
      }
      const float* x = call.qkv.f32_row(i) + j0;
      float* out = c + i * C + j0;
      for (int64_t j = 0; j < n; ++j) {
        const float* w = call.conv_weight.f32_row(j0 + j);
        float sum = 0.0f;
        for (int64_t t = 0; t + 1 < K; ++t) sum += window[t * n + j] * w[t];
        sum += x[j] * w[K - 1];
        out[j] = silu(sum);
      }
      for (int64_t t = 0; t + 2 < K; ++t) std::memcpy(window + t * n, window + (t + 1) * n, n * 4);
      std::memcpy(window + (K - 2) * n, x, n * 4);
      if (call.state_out[i] >= 0) {
        float* s = call.conv_states.f32_row(call.state_out[i]);
        for (int64_t t = 0; t + 1 < K; ++t) std::memcpy(s + t * C + j0, window + t * n, n * 4);
      }
    }
  });
}

}  // namespace

void gated_delta_net(ThreadPool& pool, const DeltaNetCall& call) {
  const specd_delta_net_params& p = call.p;
  const int64_t m = call.qkv.rows, C = call.qkv.cols;
  const int64_t Hk = p.n_key_heads, Hv = p.n_value_heads, S = p.head_dim;
  if (m == 0) return;
  static thread_local std::vector<float> conv_out;  // the device's thread: one call at a time
  conv_out.resize(static_cast<size_t>(m * C));
  float* c = conv_out.data();
  convolve(pool, call, c);
  // Phase 2: L2 norm of each row's q and k heads.
  pool.run(m, [&](int64_t i) {
    for (int64_t g = 0; g < 2 * Hk; ++g) l2_normalize(c + i * C + g * S, S, p.eps);
  });
  // Phase 3: the recurrence, value head by value head; rows in order within a head.
  const float scale = 1.0f / std::sqrt(static_cast<float>(S));
  pool.run(Hv, [&](int64_t h) {
    std::vector<float> state(static_cast<size_t>(S * S));  // M_h, value rows of key columns
    const int64_t kh = h % Hk;
    const float dt = call.dt_bias.f32_row(0)[h], a = call.a.f32_row(0)[h];
    for (int64_t i = 0; i < m; ++i) {
      if (call.state_in[i] >= 0)
        std::memcpy(state.data(), call.ssm_states.f32_row(call.state_in[i]) + h * S * S, S * S * 4);
      const float* row = c + i * C;
      const float* q = row + kh * S;
      const float* k = row + Hk * S + kh * S;
      const float* v = row + 2 * Hk * S + h * S;
      const float decay = exp_ref(softplus(call.alpha.f32_row(i)[h] + dt) * a);
      const float beta = sigmoid(call.beta.f32_row(i)[h]);
      float* o = call.out.f32_row(i) + h * S;
      for (int64_t y = 0; y < S; ++y)
        o[y] = update_row(state.data() + y * S, decay, k, q, v[y], beta, S) * scale;
      if (call.state_out[i] >= 0)
        std::memcpy(call.ssm_states.f32_row(call.state_out[i]) + h * S * S, state.data(),
                    S * S * 4);
    }
  });
}

void mul_sigmoid(ThreadPool& pool, const Mat& x, const Mat& gate, const Mat& y) {
  const int64_t n = x.cols;
  auto row = [&](int64_t i) {
    const float* a = x.f32_row(i);
    const float* g = gate.f32_row(i);
    float* o = y.f32_row(i);
    for (int64_t j = 0; j < n; ++j) o[j] = a[j] * sigmoid(g[j]);
  };
  if (x.rows * n < (1 << 14)) {
    for (int64_t i = 0; i < x.rows; ++i) row(i);
  } else {
    pool.run(x.rows, row);
  }
}

}  // namespace specd::cpu
