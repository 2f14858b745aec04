#include "ops/delta_net.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/vexp.hpp"

namespace specd::cpu {
namespace {

// The state of a head is kept key row by key row (backend.h: element x S + y is M[x][y]), so a
// step is row updates over the value index with nothing summed across lanes: lane y of `acc`
// sums over x in order, one fixed sequence of f32 operations however a clone vectorizes it and
// whether S is known at compile time (the common head sizes are, so `acc` stays in registers).
//   pass 1: row *= decay, acc += row * k[x]        (acc = M^T k after the decay)
//   d = beta (v - acc)
//   pass 2: row += d * k[x], acc += row * q[x]     (acc = M^T q after the update)
template <int64_t kS>
[[gnu::always_inline]] inline void head_step(float* state, int64_t S_, float decay, float beta,
                                             const float* k, const float* q, const float* v,
                                             float* d, float* out) {
  const int64_t S = kS ? kS : S_;
  float acc[kS ? kS : 256];
  for (int64_t y = 0; y < S; ++y) acc[y] = 0.0f;
  for (int64_t x = 0; x < S; ++x) {
    float* row = state + x * S;
    const float kx = k[x];
    for (int64_t y = 0; y < S; ++y) {
      row[y] *= decay;
      acc[y] += row[y] * kx;
    }
  }
  for (int64_t y = 0; y < S; ++y) d[y] = (v[y] - acc[y]) * beta;
  for (int64_t y = 0; y < S; ++y) acc[y] = 0.0f;
  for (int64_t x = 0; x < S; ++x) {
    float* row = state + x * S;
    const float kx = k[x], qx = q[x];
    for (int64_t y = 0; y < S; ++y) {
      row[y] += d[y] * kx;
      acc[y] += row[y] * qx;
    }
  }
  for (int64_t y = 0; y < S; ++y) out[y] = acc[y];
}

// One token of one head (S <= 256, checked by the device), for the head sizes models use.
[[gnu::target_clones("avx512f", "avx2", "default")]] void step_head(float* state, int64_t S,
                                                                    float decay, float beta,
                                                                    const float* k, const float* q,
                                                                    const float* v, float* d,
                                                                    float* out) {
  switch (S) {
    case 64:
      return head_step<64>(state, S, decay, beta, k, q, v, d, out);
    case 128:
      return head_step<128>(state, S, decay, beta, k, q, v, d, out);
    default:
      return head_step<0>(state, S, decay, beta, k, q, v, d, out);
  }
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

// sum[j] += window[j] * taps[j] for one tap over a channel range (vectorized; each channel's
// sum adds its taps in order).
[[gnu::target_clones("avx512f", "avx2", "default")]] void add_tap(float* sum, const float* window,
                                                                  const float* taps, int64_t n) {
  for (int64_t j = 0; j < n; ++j) sum[j] += window[j] * taps[j];
}

// Phase 1: the causal convolution and SiLU of every row into c [m, C], channel range by
// channel range; each row's window comes from its state_in slot or the row before, and goes
// to its state_out slot.
void convolve(ThreadPool& pool, const DeltaNetCall& call, float* c) {
  const int64_t m = call.qkv.rows, C = call.qkv.cols, K = call.p.conv_kernel;
  const int64_t tasks = (C + kConvChannels - 1) / kConvChannels;
  pool.run(tasks, [&](int64_t task) {
    const int64_t j0 = task * kConvChannels, n = std::min(kConvChannels, C - j0);
    float window[8 * kConvChannels];  // (K - 1) x n, oldest tap first; K <= 9 (checked)
    float taps[9 * kConvChannels];    // K x n: tap t of each channel
    float sum[kConvChannels], e[kConvChannels];
    for (int64_t j = 0; j < n; ++j)
      for (int64_t t = 0; t < K; ++t) taps[t * n + j] = call.conv_weight.f32_row(j0 + j)[t];
    for (int64_t i = 0; i < m; ++i) {
      if (call.state_in[i] >= 0) {
        const float* s = call.conv_states.f32_row(call.state_in[i]);
        for (int64_t t = 0; t + 1 < K; ++t) std::memcpy(window + t * n, s + t * C + j0, n * 4);
      }
      const float* x = call.qkv.f32_row(i) + j0;
      std::fill(sum, sum + n, 0.0f);
      for (int64_t t = 0; t + 1 < K; ++t) add_tap(sum, window + t * n, taps + t * n, n);
      add_tap(sum, x, taps + (K - 1) * n, n);
      for (int64_t j = 0; j < n; ++j) e[j] = -sum[j];
      exp_array(e, e, n);  // silu(s) = s / (1 + exp(-s)), exp with exp_ref's bits
      float* out = c + i * C + j0;
      for (int64_t j = 0; j < n; ++j) out[j] = sum[j] / (1.0f + e[j]);
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
    static thread_local std::vector<float> work;  // M_h, then the sums and d
    work.resize(static_cast<size_t>(S * S + S));
    float* state = work.data();
    float* d = state + S * S;
    const int64_t kh = h % Hk;
    const float dt = call.dt_bias.f32_row(0)[h], a = call.a.f32_row(0)[h];
    for (int64_t i = 0; i < m; ++i) {
      if (call.state_in[i] >= 0)
        std::memcpy(state, call.ssm_states.f32_row(call.state_in[i]) + h * S * S, S * S * 4);
      const float* row = c + i * C;
      const float* q = row + kh * S;
      const float* k = row + Hk * S + kh * S;
      const float* v = row + 2 * Hk * S + h * S;
      const float decay = exp_ref(softplus(call.alpha.f32_row(i)[h] + dt) * a);
      const float beta = sigmoid(call.beta.f32_row(i)[h]);
      float* o = call.out.f32_row(i) + h * S;
      step_head(state, S, decay, beta, k, q, v, d, o);
      for (int64_t y = 0; y < S; ++y) o[y] *= scale;
      if (call.state_out[i] >= 0)
        std::memcpy(call.ssm_states.f32_row(call.state_out[i]) + h * S * S, state, S * S * 4);
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
