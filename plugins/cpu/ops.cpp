#include "ops.hpp"

#include <cmath>
#include <cstring>
#include <vector>

#include <immintrin.h>

#include "decode.hpp"
#include "gemm_kernels.hpp"
#include "vexp.hpp"

namespace specd::cpu {
namespace {

constexpr int64_t kSerialElements = 1 << 14;  // below this, threads cost more than they save

template <class F>
void for_rows(ThreadPool& pool, int64_t rows, int64_t cols, F&& fn) {
  if (rows * cols < kSerialElements) {
    for (int64_t i = 0; i < rows; ++i) fn(i);
  } else {
    pool.run(rows, [&](int64_t i) { fn(i); });
  }
}

}  // namespace

void rms_norm(ThreadPool& pool, const Mat& x, const Mat& weight, float eps, const Mat& y) {
  const int64_t n = x.cols;
  const float* w = weight.f32_row(0);
  for_rows(pool, x.rows, n, [&](int64_t i) {
    const float* xi = x.f32_row(i);
    float* yi = y.f32_row(i);
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(xi[j]) * xi[j];
    const float s = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    for (int64_t j = 0; j < n; ++j) yi[j] = (xi[j] * s) * w[j];
  });
}

void rope(ThreadPool& pool, const Mat& x, const int32_t* positions, const RopeSpec& p) {
  const int64_t half = p.n_rot / 2;
  for_rows(pool, x.rows, x.cols, [&](int64_t i) {
    float cs[512], sn[512];  // n_rot <= 1024 (checked by the device)
    const double pos = positions[i];
    for (int64_t j = 0; j < half; ++j) {
      double theta =
          pos * std::pow(static_cast<double>(p.base), -2.0 * static_cast<double>(j) / p.n_rot);
      if (p.freq_factors) theta /= static_cast<double>(p.freq_factors[j]);
      if (p.freq_scale != 1.0f) theta *= static_cast<double>(p.freq_scale);
      cs[j] = static_cast<float>(std::cos(theta));
      sn[j] = static_cast<float>(std::sin(theta));
    }
    float* xi = x.f32_row(i);
    for (uint32_t h = 0; h < p.n_head; ++h) {
      float* v = xi + static_cast<int64_t>(h) * p.head_dim;
      if (p.neox) {  // pairs (j, j + half)
        for (int64_t j = 0; j < half; ++j) {
          const float x0 = v[j], x1 = v[j + half];
          v[j] = x0 * cs[j] - x1 * sn[j];
          v[j + half] = x0 * sn[j] + x1 * cs[j];
        }
      } else {  // pairs (2j, 2j + 1)
        for (int64_t j = 0; j < half; ++j) {
          const float x0 = v[2 * j], x1 = v[2 * j + 1];
          v[2 * j] = x0 * cs[j] - x1 * sn[j];
          v[2 * j + 1] = x0 * sn[j] + x1 * cs[j];
        }
      }
    }
  });
}

void get_rows(ThreadPool& pool, const Mat& table, const int32_t* ids, const Mat& y) {
  const int64_t d = table.cols;
  for_rows(pool, y.rows, d, [&](int64_t i) {
    const uint8_t* src = table.row(ids[i]);
    float* dst = y.f32_row(i);
    decode_row(src, table.dtype, d, dst);
  });
}

namespace {

[[gnu::target("avx512f")]] void exp_array_avx512(const float* in, float* out, int64_t n) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(out + j, exp16(_mm512_loadu_ps(in + j)));
  if (j < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - j)) - 1);
    _mm512_mask_storeu_ps(out + j, tail, exp16(_mm512_maskz_loadu_ps(tail, in + j)));
  }
}

[[gnu::target("avx2")]] void exp_array_avx2(const float* in, float* out, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(out + j, exp8(_mm256_loadu_ps(in + j)));
  for (; j < n; ++j) out[j] = exp_ref(in[j]);
}

// o[j] = g[j] / (1 + exp_ref(-g[j])) * u[j], 16 lanes at a time (the same operations).
[[gnu::target("avx512f")]] void swiglu_row_avx512(const float* g, const float* u, float* o,
                                                  int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512i sign = _mm512_set1_epi32(INT32_MIN);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 gv = _mm512_loadu_ps(g + j);
    const __m512 e = exp16(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(gv), sign)));
    _mm512_storeu_ps(
        o + j, _mm512_mul_ps(_mm512_div_ps(gv, _mm512_add_ps(one, e)), _mm512_loadu_ps(u + j)));
  }
  for (; j < n; ++j) o[j] = g[j] / (1.0f + exp_ref(-g[j])) * u[j];
}

[[gnu::target("avx2")]] void swiglu_row_avx2(const float* g, const float* u, float* o, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 gv = _mm256_loadu_ps(g + j);
    const __m256 e = exp8(_mm256_xor_ps(gv, sign));
    _mm256_storeu_ps(
        o + j, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + j)));
  }
  for (; j < n; ++j) o[j] = g[j] / (1.0f + exp_ref(-g[j])) * u[j];
}

}  // namespace

void exp_array(const float* in, float* out, int64_t n) {
  if (avx512_available()) return exp_array_avx512(in, out, n);
  if (avx2_available()) return exp_array_avx2(in, out, n);
  for (int64_t j = 0; j < n; ++j) out[j] = exp_ref(in[j]);
}

// SiLU(gate) * up with exp_ref (vexp.hpp): the same bits with AVX-512, AVX2 or neither.
void swiglu(ThreadPool& pool, const Mat& gate, const Mat& up, const Mat& y) {
  const int64_t n = gate.cols;
  const bool avx512 = avx512_available(), avx2 = avx2_available();
  for_rows(pool, gate.rows, n, [&](int64_t i) {
    const float* g = gate.f32_row(i);
    const float* u = up.f32_row(i);
    float* o = y.f32_row(i);
    if (avx512) {
      swiglu_row_avx512(g, u, o, n);
    } else if (avx2) {
      swiglu_row_avx2(g, u, o, n);
    } else {
      for (int64_t j = 0; j < n; ++j) o[j] = g[j] / (1.0f + exp_ref(-g[j])) * u[j];
    }
  });
}

void add(ThreadPool& pool, const Mat& a, const Mat& b, const Mat& y) {
  const int64_t n = a.cols;
  for_rows(pool, a.rows, n, [&](int64_t i) {
    const float* pa = a.f32_row(i);
    const float* pb = b.f32_row(b.rows == 1 ? 0 : i);  // one row: a bias for every row
    float* o = y.f32_row(i);
    for (int64_t j = 0; j < n; ++j) o[j] = pa[j] + pb[j];
  });
}

void copy_rows(const Mat& src, const int32_t* indices, const Mat& dst, int64_t row_bytes) {
  for (int64_t i = 0; i < dst.rows; ++i)
    std::memmove(dst.row(i), src.row(indices[i]), static_cast<size_t>(row_bytes));
}

void softmax(ThreadPool& pool, const Mat& x, float temperature, const Mat& y) {
  const int64_t n = x.cols;
  for_rows(pool, x.rows, n, [&](int64_t i) {
    const float* xi = x.f32_row(i);
    float* yi = y.f32_row(i);
    float mx = xi[0];
    for (int64_t j = 1; j < n; ++j) mx = xi[j] > mx ? xi[j] : mx;
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      yi[j] = std::exp((xi[j] - mx) / temperature);
      sum += yi[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < n; ++j) yi[j] *= inv;
  });
}

void argmax(const Mat& x, int32_t* out) {
  for (int64_t i = 0; i < x.rows; ++i) {
    const float* xi = x.f32_row(i);
    int64_t best = 0;
    for (int64_t j = 1; j < x.cols; ++j)
      if (xi[j] > xi[best]) best = j;
    out[i] = static_cast<int32_t>(best);
  }
}

namespace {

// Fixed-order dot product: 16 interleaved lanes, then lanes added pairwise.
[[gnu::always_inline]] inline float dot16(const float* a, const float* b, int64_t n) {
  float lane[16] = {};
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int l = 0; l < 16; ++l) lane[l] += a[k + l] * b[k + l];
  for (int l = 0; k + l < n; ++l) lane[l] += a[k + l] * b[k + l];
  for (int width = 8; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lane[l] += lane[l + width];
  return lane[0];
}

// One row and head of attention: scores of the keys in logical order (slot j of the cache for
// key j), their softmax, the weighted sum of the values. Built twice (AVX-512 and the
// baseline, chosen at load time): the lanes and the order of every operation are the same, so
// the bits are (no contraction to fma in this file).
[[gnu::target_clones("avx512f", "default")]] void attend_head(
    const float* qi, const Mat& k, const Mat& v, int64_t kv_off, int64_t hd, int64_t n_keys,
    int64_t prefix, const int32_t* extra, float scale, float* scores, float* acc, float* o) {
  auto slot = [&](int64_t j) { return j < prefix ? j : static_cast<int64_t>(extra[j - prefix]); };
  float mx = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float s = dot16(qi, k.f32_row(slot(j)) + kv_off, hd) * scale;
    scores[j] = s;
    mx = s > mx ? s : mx;
  }
  for (int64_t d = 0; d < hd; ++d) acc[d] = 0.0f;
  for (int64_t j = 0; j < n_keys; ++j) scores[j] = scores[j] - mx;
  exp_array(scores, scores, n_keys);
  float sum = 0;
  for (int64_t j = 0; j < n_keys; ++j) {  // keys in logical order
    const float e = scores[j];
    sum += e;
    const float* vj = v.f32_row(slot(j)) + kv_off;
    for (int64_t d = 0; d < hd; ++d) acc[d] += e * vj[d];
  }
  for (int64_t d = 0; d < hd; ++d) o[d] = acc[d] / sum;
}

// attend_head for head_dim HD (a multiple of 16) with AVX-512, the query and the sum of
// values in registers: dot16's lanes (16 products added in k order from +0, then lanes
// l + 8, l + 4, l + 2, l + 1), the same exp_ref and sums, the same products and adds
// of the values: the bits of attend_head.
// (GCC 12 warns about _mm256_undefined_pd() inside its own intrinsics headers.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
template <int HD>
[[gnu::target("avx512f")]] void attend_head_avx512(const float* qi, const Mat& k, const Mat& v,
                                                   int64_t kv_off, int64_t n_keys, int64_t prefix,
                                                   const int32_t* extra, float scale, float* scores,
                                                   float* o) {
  constexpr int V = HD / 16;
  auto slot = [&](int64_t j) { return j < prefix ? j : static_cast<int64_t>(extra[j - prefix]); };
  __m512 qv[V];
  for (int c = 0; c < V; ++c) qv[c] = _mm512_loadu_ps(qi + 16 * c);
  float mx = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* kj = k.f32_row(slot(j)) + kv_off;
    __m512 lane = _mm512_setzero_ps();
    for (int c = 0; c < V; ++c)
      lane = _mm512_add_ps(lane, _mm512_mul_ps(qv[c], _mm512_loadu_ps(kj + 16 * c)));
    const __m256 l8 =
        _mm256_add_ps(_mm512_castps512_ps256(lane),
                      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(lane), 1)));
    const __m128 l4 = _mm_add_ps(_mm256_castps256_ps128(l8), _mm256_extractf128_ps(l8, 1));
    const __m128 l2 = _mm_add_ps(l4, _mm_movehl_ps(l4, l4));
    const float s = _mm_cvtss_f32(_mm_add_ss(l2, _mm_shuffle_ps(l2, l2, 1))) * scale;
    scores[j] = s;
    mx = s > mx ? s : mx;
  }
  __m512 acc[V];
  for (int c = 0; c < V; ++c) acc[c] = _mm512_setzero_ps();
  for (int64_t j = 0; j < n_keys; ++j) scores[j] = scores[j] - mx;
  exp_array(scores, scores, n_keys);
  float sum = 0;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float e = scores[j];
    sum += e;
    const float* vj = v.f32_row(slot(j)) + kv_off;
    const __m512 ev = _mm512_set1_ps(e);
    for (int c = 0; c < V; ++c)
      acc[c] = _mm512_add_ps(acc[c], _mm512_mul_ps(ev, _mm512_loadu_ps(vj + 16 * c)));
  }
  const __m512 sv = _mm512_set1_ps(sum);
  for (int c = 0; c < V; ++c) _mm512_storeu_ps(o + 16 * c, _mm512_div_ps(acc[c], sv));
}
#pragma GCC diagnostic pop

}  // namespace

void attention(ThreadPool& pool, const Mat& q, const Mat& k, const Mat& v, const MaskRows& mask,
               const specd_attention_params& p, const Mat& out) {
  const int64_t hd = p.head_dim;
  const uint32_t group = p.n_head / p.n_head_kv;
  const int64_t tasks = q.rows * p.n_head;
  // Tasks go head by head (row i of task t is t % rows): consecutive tasks read the same keys
  // and values, which stay in cache across the rows. Each (row, head) is computed the same way
  // whichever task or thread runs it.
  const bool avx512 = avx512_available();
  auto run = [&](int64_t t) {
    const int64_t i = t % q.rows;
    const uint32_t h = static_cast<uint32_t>(t / q.rows);
    const int64_t kv_off = static_cast<int64_t>(h / group) * hd;
    const int64_t prefix = mask.prefix[i];
    const int64_t n_keys = prefix + mask.begin[i + 1] - mask.begin[i];
    thread_local std::vector<float> scores, acc;
    scores.resize(static_cast<size_t>(n_keys));
    acc.resize(static_cast<size_t>(hd));
    const float* qi = q.f32_row(i) + h * hd;
    const int32_t* extra = mask.extra + mask.begin[i];
    float* o = out.f32_row(i) + h * hd;
    if (hd == 64 && avx512)
      attend_head_avx512<64>(qi, k, v, kv_off, n_keys, prefix, extra, p.scale, scores.data(), o);
    else if (hd == 128 && avx512)
      attend_head_avx512<128>(qi, k, v, kv_off, n_keys, prefix, extra, p.scale, scores.data(), o);
    else
      attend_head(qi, k, v, kv_off, hd, n_keys, prefix, extra, p.scale, scores.data(), acc.data(),
                  o);
  };
  // The work of a task grows with its keys: one decoded token over a long cache is worth
  // spreading over the threads although it has few (row, head) tasks.
  const int64_t last = q.rows - 1;
  const int64_t keys = q.rows > 0 ? mask.prefix[last] + mask.begin[last + 1] - mask.begin[last] : 0;
  if (tasks * hd * (keys + 1) < (int64_t{1} << 16)) {
    for (int64_t t = 0; t < tasks; ++t) run(t);
  } else {
    pool.run(tasks, run);
  }
}

}  // namespace specd::cpu
