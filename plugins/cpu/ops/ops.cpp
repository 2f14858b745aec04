#include "ops/ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <immintrin.h>

#include "gemm/decode.hpp"
#include "gemm/gemm_kernels.hpp"
#include "ops/attention_avx2.hpp"
#include "ops/attention_sinks.hpp"
#include "ops/kv_rows.hpp"
#include "ops/vexp.hpp"
#include "runtime/work_shares.hpp"

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

// (GCC 12 warns about _mm256_undefined_ps() inside its own intrinsics headers.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// acc + col * col, each of the 8 floats of col made double first (the product is exact).
[[gnu::target("avx512f"), gnu::always_inline]] inline __m512d add_squares(__m512d acc, __m256 col) {
  const __m512d v = _mm512_cvtps_pd(col);
  return _mm512_add_pd(acc, _mm512_mul_pd(v, v));
}

// The sums of squares of 8 rows side by side, one double lane each: the same chain of adds in
// column order as rms_norm's scalar loop for each row. 8 x 8 blocks of the rows are transposed
// so that column j of the 8 rows is one vector.
[[gnu::target("avx512f")]] void sum_squares_8(const float* const* xr, int64_t n, double* ss) {
  __m512d acc = _mm512_setzero_pd();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      const __m256 a = _mm256_loadu_ps(xr[i] + j), b = _mm256_loadu_ps(xr[i + 1] + j);
      t[i] = _mm256_unpacklo_ps(a, b);  // a0 b0 a1 b1 | a4 b4 a5 b5
      t[i + 1] = _mm256_unpackhi_ps(a, b);
    }
    for (int h = 0; h < 8; h += 4)  // u[h + c]: columns c and c + 4 of rows h .. h + 3
      for (int c = 0; c < 2; ++c) {
        u[h + 2 * c] = _mm256_shuffle_ps(t[h + c], t[h + 2 + c], 0x44);
        u[h + 2 * c + 1] = _mm256_shuffle_ps(t[h + c], t[h + 2 + c], 0xEE);
      }
    for (int c = 0; c < 4; ++c)
      acc = add_squares(acc, _mm256_permute2f128_ps(u[c], u[4 + c], 0x20));
    for (int c = 0; c < 4; ++c)
      acc = add_squares(acc, _mm256_permute2f128_ps(u[c], u[4 + c], 0x31));
  }
  for (; j < n; ++j) {
    alignas(32) float col[8];
    for (int i = 0; i < 8; ++i) col[i] = xr[i][j];
    acc = add_squares(acc, _mm256_load_ps(col));
  }
  _mm512_storeu_pd(ss, acc);
}
#pragma GCC diagnostic pop

// y = (x * s) * w, element by element (y may be x). Built twice, AVX-512 and the baseline: the
// same two roundings either way.
[[gnu::target_clones("avx512f", "default")]] void scale_row(const float* x, float s, const float* w,
                                                            float* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] = (x[j] * s) * w[j];
}

}  // namespace

// Each row's sum of squares is one chain of double adds in column order (the products are
// exact), whose latency leaves the adder waiting: rows go side by side, eight in one vector
// with AVX-512 (sum_squares_8), else four independent chains. Each row's operations are
// unchanged, so the bits do not depend on which rows go together or on m.
void rms_norm(ThreadPool& pool, const Mat& x, const Mat& weight, float eps, const Mat& y) {
  const int64_t group = avx512_available() ? 8 : 4;
  const int64_t n = x.cols;
  const float* w = weight.f32_row(0);
  for_rows(pool, (x.rows + group - 1) / group, group * n, [&](int64_t g) {
    const int64_t i0 = g * group;
    const int64_t rows = std::min(group, x.rows - i0);
    double ss[8] = {};
    if (rows == 8) {
      const float* xr[8];
      for (int r = 0; r < 8; ++r) xr[r] = x.f32_row(i0 + r);
      sum_squares_8(xr, n, ss);
    } else if (rows == 4) {
      const float *x0 = x.f32_row(i0), *x1 = x.f32_row(i0 + 1), *x2 = x.f32_row(i0 + 2),
                  *x3 = x.f32_row(i0 + 3);
      for (int64_t j = 0; j < n; ++j) {
        ss[0] += static_cast<double>(x0[j]) * x0[j];
        ss[1] += static_cast<double>(x1[j]) * x1[j];
        ss[2] += static_cast<double>(x2[j]) * x2[j];
        ss[3] += static_cast<double>(x3[j]) * x3[j];
      }
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        const float* xi = x.f32_row(i0 + r);
        for (int64_t j = 0; j < n; ++j) ss[r] += static_cast<double>(xi[j]) * xi[j];
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float s = static_cast<float>(1.0 / std::sqrt(ss[r] / static_cast<double>(n) + eps));
      scale_row(x.f32_row(i0 + r), s, w, y.f32_row(i0 + r), n);
    }
  });
}

namespace {

// cos and sin of rope's angles for one RopeSpec, by position, in the double expressions rope
// has always used (theta = pos * base^(-2j / n_rot), / freq_factors[j], * freq_scale), or
// YaRN's mix of that angle with the unscaled one (sdk::RopeYarn), cos and sin times its
// mscale (exactly 1 without YaRN, so the bits stay 0.2's): q and k of every layer of a
// forward share their positions. One table per spec and thread (no lock),
// kSlots positions in it (position pos in slot pos % kSlots), kSpecs specs per thread.
class RopeAngles {
 public:
  static constexpr uint32_t kSlots = 128;

  bool matches(const RopeSpec& p) const {
    return n_rot_ == p.n_rot && std::memcmp(&base_, &p.base, sizeof base_) == 0 &&
           std::memcmp(&scale_, &p.freq_scale, sizeof scale_) == 0 &&
           factors_.empty() == !p.freq_factors &&
           (factors_.empty() ||
            std::memcmp(factors_.data(), p.freq_factors, factors_.size() * sizeof(float)) == 0) &&
           std::memcmp(&yarn_, &p.yarn, sizeof yarn_) == 0;
  }

  void reset(const RopeSpec& p) {
    n_rot_ = p.n_rot;
    base_ = p.base;
    scale_ = p.freq_scale;
    const uint32_t half = p.n_rot / 2;
    factors_.assign(p.freq_factors, p.freq_factors ? p.freq_factors + half : nullptr);
    inv_.resize(half);
    for (uint32_t j = 0; j < half; ++j)
      inv_[j] = std::pow(static_cast<double>(p.base), -2.0 * static_cast<double>(j) / p.n_rot);
    yarn_ = p.yarn;
    ramp_.clear();
    if (yarn_.ext_factor != 0.0)
      for (uint32_t j = 0; j < half; ++j) ramp_.push_back(yarn_.ramp(j));
    pos_.assign(kSlots, kEmpty);
    cs_sn_.resize(static_cast<size_t>(kSlots) * 2 * half);
  }

  // cos of the n_rot / 2 angles of position pos, then their sin.
  const float* at(int32_t pos) {
    const uint32_t half = n_rot_ / 2, slot = static_cast<uint32_t>(pos) % kSlots;
    float* cs = cs_sn_.data() + static_cast<size_t>(slot) * 2 * half;
    if (pos_[slot] == pos) return cs;
    float* sn = cs + half;
    for (uint32_t j = 0; j < half; ++j) {
      double theta = static_cast<double>(pos) * inv_[j];
      if (!factors_.empty()) theta /= static_cast<double>(factors_[j]);
      if (!ramp_.empty()) {  // theta is YaRN's extrapolated angle, theta_e
        theta = theta * static_cast<double>(scale_) * (1.0 - ramp_[j]) + theta * ramp_[j];
      } else if (scale_ != 1.0f) {
        theta *= static_cast<double>(scale_);
      }
      cs[j] = static_cast<float>(std::cos(theta) * yarn_.mscale);
      sn[j] = static_cast<float>(std::sin(theta) * yarn_.mscale);
    }
    pos_[slot] = pos;
    return cs;
  }

 private:
  static constexpr int64_t kEmpty = INT64_MIN;
  uint32_t n_rot_ = 0;
  float base_ = 0, scale_ = 0;
  std::vector<float> factors_;  // empty: none
  std::vector<double> inv_;     // base^(-2j / n_rot)
  sdk::RopeYarn yarn_;          // the spec's sdk::rope_yarn
  std::vector<double> ramp_;    // YaRN's ramp(j); empty: no YaRN
  std::vector<int64_t> pos_;    // the position in each slot, or kEmpty
  std::vector<float> cs_sn_;
};

const float* rope_angles(const RopeSpec& p, int32_t pos) {
  constexpr int kSpecs = 4;
  thread_local RopeAngles tables[kSpecs];
  thread_local int used = 0, next = 0;
  for (int t = 0; t < used; ++t)
    if (tables[t].matches(p)) return tables[t].at(pos);
  const int t = used < kSpecs ? used++ : next++ % kSpecs;  // the oldest goes
  tables[t].reset(p);
  return tables[t].at(pos);
}

// (GCC 12 warns about _mm512_undefined_ps() inside its own intrinsics headers.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Pairs (2j, 2j + 1) of one head rotated, 8 pairs per vector: the products of the scalar loop
// (x0 * cos, x1 * sin; x0 * sin, x1 * cos) and its subtraction and addition, lane for lane, so
// the bits are the scalar loop's. At 8 rows this took 0.57% of a forward's samples scalar.
// Returns the number of pairs done (a multiple of 8); the caller rotates the rest.
[[gnu::target("avx512f")]] int64_t rope_pairs_avx512(float* v, const float* cs, const float* sn,
                                                     int64_t half) {
  const __m512i twice = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  constexpr __mmask16 kEven = 0x5555;
  int64_t j = 0;
  for (; j + 8 <= half; j += 8) {
    const __m512 x = _mm512_loadu_ps(v + 2 * j);
    const __m512 c = _mm512_permutexvar_ps(twice, _mm512_zextps256_ps512(_mm256_loadu_ps(cs + j)));
    const __m512 s = _mm512_permutexvar_ps(twice, _mm512_zextps256_ps512(_mm256_loadu_ps(sn + j)));
    const __m512 p = _mm512_mul_ps(x, c);                           // x0 c | x1 c
    const __m512 q = _mm512_mul_ps(_mm512_permute_ps(x, 0xB1), s);  // x1 s | x0 s
    _mm512_storeu_ps(v + 2 * j, _mm512_mask_sub_ps(_mm512_add_ps(p, q), kEven, p, q));
  }
  return j;
}

#pragma GCC diagnostic pop

}  // namespace

void rope(ThreadPool& pool, const Mat& x, const int32_t* positions, const RopeSpec& p) {
  const int64_t half = p.n_rot / 2;
  const bool avx512 = avx512_available();
  for_rows(pool, x.rows, x.cols, [&](int64_t i) {
    const float* cs = rope_angles(p, positions[i]);
    const float* sn = cs + half;
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
        for (int64_t j = avx512 ? rope_pairs_avx512(v, cs, sn, half) : 0; j < half; ++j) {
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

namespace {

// A gated activation over the rows of gate and up into y, each row by the widest of its
// three kernels (row(g, u, o, n)) this CPU runs.
template <class Avx512Row, class Avx2Row, class GenericRow>
void gated_rows(ThreadPool& pool, const Mat& gate, const Mat& up, const Mat& y,
                Avx512Row avx512_row, Avx2Row avx2_row, GenericRow generic_row) {
  const int64_t n = gate.cols;
  const bool avx512 = avx512_available(), avx2 = avx2_available();
  for_rows(pool, gate.rows, n, [&](int64_t i) {
    const float* g = gate.f32_row(i);
    const float* u = up.f32_row(i);
    float* o = y.f32_row(i);
    if (avx512)
      avx512_row(g, u, o, n);
    else if (avx2)
      avx2_row(g, u, o, n);
    else
      generic_row(g, u, o, n);
  });
}

}  // namespace

// SiLU(gate) * up with exp_ref (vexp.hpp): the same bits with AVX-512, AVX2 or neither.
void swiglu(ThreadPool& pool, const Mat& gate, const Mat& up, const Mat& y) {
  gated_rows(pool, gate, up, y, swiglu_row_avx512, swiglu_row_avx2,
             [](const float* g, const float* u, float* o, int64_t n) {
               for (int64_t j = 0; j < n; ++j) o[j] = g[j] / (1.0f + exp_ref(-g[j])) * u[j];
             });
}

namespace {

// gpt-oss's clamped SwiGLU of one element, the definition of the bits: the gate clamped from
// above, up from both sides, then g * sigmoid(alpha g) * (u + 1). The comparisons are written
// as the vector min and max compute them (their first operand when the comparison holds, else
// the second), so a NaN input stays NaN in every lane and in this loop alike.
inline float swiglu_oai_one(float g, float u, float alpha, float limit) {
  g = limit < g ? limit : g;
  u = -limit > u ? -limit : u;
  u = limit < u ? limit : u;
  return g / (1.0f + exp_ref(-(alpha * g))) * (u + 1.0f);
}

// (GCC 12 warns about _mm512_undefined_ps() inside its own intrinsics headers.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// swiglu_oai_one over a row, 16 lanes at a time: the same operations in the same order.
[[gnu::target("avx512f")]] void swiglu_oai_row_avx512(const float* g, const float* u, float* o,
                                                      int64_t n, float alpha, float limit) {
  const __m512 one = _mm512_set1_ps(1.0f), a = _mm512_set1_ps(alpha);
  const __m512 hi = _mm512_set1_ps(limit), lo = _mm512_set1_ps(-limit);
  const __m512i sign = _mm512_set1_epi32(INT32_MIN);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 gv = _mm512_min_ps(hi, _mm512_loadu_ps(g + j));
    const __m512 uv = _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_loadu_ps(u + j)));
    const __m512 ag = _mm512_mul_ps(a, gv);
    const __m512 e = exp16(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(ag), sign)));
    _mm512_storeu_ps(
        o + j, _mm512_mul_ps(_mm512_div_ps(gv, _mm512_add_ps(one, e)), _mm512_add_ps(uv, one)));
  }
  for (; j < n; ++j) o[j] = swiglu_oai_one(g[j], u[j], alpha, limit);
}
#pragma GCC diagnostic pop

[[gnu::target("avx2")]] void swiglu_oai_row_avx2(const float* g, const float* u, float* o,
                                                 int64_t n, float alpha, float limit) {
  const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
  const __m256 a = _mm256_set1_ps(alpha);
  const __m256 hi = _mm256_set1_ps(limit), lo = _mm256_set1_ps(-limit);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 gv = _mm256_min_ps(hi, _mm256_loadu_ps(g + j));
    const __m256 uv = _mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_loadu_ps(u + j)));
    const __m256 e = exp8(_mm256_xor_ps(_mm256_mul_ps(a, gv), sign));
    _mm256_storeu_ps(
        o + j, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), _mm256_add_ps(uv, one)));
  }
  for (; j < n; ++j) o[j] = swiglu_oai_one(g[j], u[j], alpha, limit);
}

}  // namespace

// swiglu_oai_one with exp_ref: the same bits with AVX-512, AVX2 or neither. Each element is
// read before its output is written, so y may be gate or up.
void swiglu_oai(ThreadPool& pool, const Mat& gate, const Mat& up, float alpha, float limit,
                const Mat& y) {
  gated_rows(
      pool, gate, up, y,
      [&](const float* g, const float* u, float* o, int64_t n) {
        swiglu_oai_row_avx512(g, u, o, n, alpha, limit);
      },
      [&](const float* g, const float* u, float* o, int64_t n) {
        swiglu_oai_row_avx2(g, u, o, n, alpha, limit);
      },
      [&](const float* g, const float* u, float* o, int64_t n) {
        for (int64_t j = 0; j < n; ++j) o[j] = swiglu_oai_one(g[j], u[j], alpha, limit);
      });
}

namespace {

// o = a + b, element by element (o may be a). Built twice, AVX-512 and the baseline: the same
// rounding either way.
[[gnu::target_clones("avx512f", "default")]] void add_row(const float* a, const float* b, float* o,
                                                          int64_t n) {
  for (int64_t j = 0; j < n; ++j) o[j] = a[j] + b[j];
}

}  // namespace

void add(ThreadPool& pool, const Mat& a, const Mat& b, const Mat& y) {
  const int64_t n = a.cols;
  for_rows(pool, a.rows, n, [&](int64_t i) {
    // One row of b: a bias for every row.
    add_row(a.f32_row(i), b.f32_row(b.rows == 1 ? 0 : i), y.f32_row(i), n);
  });
}

void copy_rows(const Mat& src, const int32_t* indices, const Mat& dst, int64_t row_bytes) {
  for (int64_t i = 0; i < dst.rows; ++i)
    std::memmove(dst.row(i), src.row(indices[i]), static_cast<size_t>(row_bytes));
}

namespace {

// The cache slot of a row's key j: the first `prefix` keys are slots 0 .. prefix - 1, the rest
// the row's extra slots.
[[gnu::always_inline]] inline int64_t key_slot(int64_t j, int64_t prefix, const int32_t* extra) {
  return j < prefix ? j : static_cast<int64_t>(extra[j - prefix]);
}

// Asks for the `bytes` at `row` (a head's slice of a cache row) to be brought into L1, or with
// _MM_HINT_T1 into L2.
template <_mm_hint Hint = _MM_HINT_T0>
inline void prefetch_row(const float* row, int64_t bytes) {
  for (int64_t line = 0; line < bytes; line += 64)
    _mm_prefetch(reinterpret_cast<const char*>(row) + line, Hint);
}

// Rows kFarRows ahead of the one a pass reads are asked for into L2 (prefetch_row<_MM_HINT_T1>).
// Past the first tokens a layer's cache comes from memory (the weights read since the layer last
// ran evict it), a head's slice at a time (256 or 512 bytes of each cache row), and the near
// prefetches alone left attention waiting on it: on a Zen 4 VM (constructed 95 M Q4_K_M, 2
// threads) one row's attention after 900 tokens took 0.60-0.74x as long with these, eight rows'
// 0.73-0.93x; after 64 tokens one row's 0.85x and eight rows' about the same.
constexpr int64_t kFarRows = 64;

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

// One row and head of attention: scores of the keys in logical order (krow[j], vrow[j]: key
// j's rows, offset to the KV head), their softmax (with the head's sink, when `sink` is not
// null: attention_sinks.hpp), the weighted sum of the values. The definition of the bits, and
// the path for head_dims other than 64 and 128 or CPUs without AVX-512. Built twice (AVX-512
// and the baseline, chosen at load time): the lanes and the order of every operation are the
// same, so the bits are (no contraction to fma in this file).
[[gnu::target_clones("avx512f", "default")]] void attend_head(
    const float* qi, const float* const* krow, const float* const* vrow, int64_t hd, int64_t n_keys,
    float scale, const float* sink, float* scores, float* acc, float* o) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float s = dot16(qi, krow[j], hd) * scale;
    scores[j] = s;
    mx = s > mx ? s : mx;
  }
  mx = max_with_sink(mx, sink);
  for (int64_t d = 0; d < hd; ++d) acc[d] = 0.0f;
  for (int64_t j = 0; j < n_keys; ++j) scores[j] = scores[j] - mx;
  exp_array(scores, scores, n_keys);
  float sum = 0;
  for (int64_t j = 0; j < n_keys; ++j) {  // keys in logical order
    const float e = scores[j];
    sum += e;
    const float* vj = vrow[j];
    for (int64_t d = 0; d < hd; ++d) acc[d] += e * vj[d];
  }
  sum = sum_with_sink(sum, sink, mx);
  for (int64_t d = 0; d < hd; ++d) o[d] = acc[d] / sum;
}

// Attention of NP consecutive query heads of one row sharing a KV head, head_dim HD (a
// multiple of 16), with AVX-512: the bits of attend_head for each head. Scores come 16 keys at
// a time from dot16_x16 (dot16's lanes and reduction) times scale; their largest, per lane
// then across lanes, is the value attend_head's scan in key order finds (NaN never wins either
// way; equal scores have equal bits but for zeros of both signs, so a zero maximum is rescanned
// in key order); exp_ref of each score minus it; then each key's value row is loaded once for
// the NP heads, whose sums of e * value (and of e) go on in key order: NP * HD / 16 independent
// chains.
// (GCC 12 warns about _mm256_undefined_pd() inside its own intrinsics headers.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// dot16 of one query with 16 keys at once, for head_dim HD (a multiple of 16) with AVX-512:
// key t of the block is kp[t] (the caller passes the keys in the transposed order kTransposed
// so that score j lands in lane j). Each key's 16 lanes are dot16's products added in k order;
// the pairwise reduction (lanes l + 8, l + 4, l + 2, l + 1) is done for the 16 keys together by
// shuffles, each add taking the same two lanes of the same key as dot16's. dot16 starts its
// lanes from +0, which only turns a lane of -0 products into +0; a -0 lane can only change the
// sign of a zero total, so adding +0 once to the totals gives dot16's bits.
template <int HD>
[[gnu::target("avx512f"), gnu::always_inline]] inline __m512 dot16_x16(const __m512* qv,
                                                                       const float* const* kp) {
  constexpr int V = HD / 16;
  __m512 l[16];
  for (int t = 0; t < 16; ++t) {
    l[t] = _mm512_mul_ps(qv[0], _mm512_loadu_ps(kp[t]));
    for (int c = 1; c < V; ++c)
      l[t] = _mm512_add_ps(l[t], _mm512_mul_ps(qv[c], _mm512_loadu_ps(kp[t] + 16 * c)));
  }
  __m512 s[8], u[4];
  for (int p = 0; p < 8; ++p)  // lanes l + 8: [keys 2p, 2p + 1] x 8 lanes
    s[p] = _mm512_add_ps(_mm512_shuffle_f32x4(l[2 * p], l[2 * p + 1], 0x44),
                         _mm512_shuffle_f32x4(l[2 * p], l[2 * p + 1], 0xEE));
  for (int r = 0; r < 4; ++r)  // lanes l + 4: [keys 4r .. 4r + 3] x 4 lanes
    u[r] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * r], s[2 * r + 1], 0x88),
                         _mm512_shuffle_f32x4(s[2 * r], s[2 * r + 1], 0xDD));
  // lanes l + 2: 128-bit lane i holds keys i and 4 + i (then 8 + i and 12 + i) x 2 lanes
  const __m512 w0 = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 w1 = _mm512_add_ps(_mm512_shuffle_ps(u[2], u[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_ps(u[2], u[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // lanes l + 1: lane 4i + s holds key 4s + i
  const __m512 d = _mm512_add_ps(_mm512_shuffle_ps(w0, w1, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(w0, w1, _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(d, _mm512_setzero_ps());  // -0 (all products -0) to dot16's +0
}

// Lane of dot16_x16's result that key t of its block lands in (and the key that goes in slot t).
constexpr int kTransposed[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};

// krow[j], vrow[j]: key j's rows in the caches (offset to the KV head); scores: NP * n_keys;
// sink: the NP heads' sinks, or null.
template <int HD, int NP>
[[gnu::target("avx512f")]] void attend_heads_avx512(const float* q, const float* const* krow,
                                                    const float* const* vrow, int64_t n_keys,
                                                    float scale, const float* sink, float* scores,
                                                    float* o) {
  constexpr int V = HD / 16;
  const __m512 sc = _mm512_set1_ps(scale);
  float mxs[NP];
  for (int a = 0; a < NP; ++a) {
    __m512 qv[V];
    for (int c = 0; c < V; ++c) qv[c] = _mm512_loadu_ps(q + a * HD + 16 * c);
    float* sa = scores + a * n_keys;
    __m512 mxv = _mm512_set1_ps(-INFINITY);
    for (int64_t j0 = 0; j0 < n_keys; j0 += 16) {
      const int64_t nb = n_keys - j0 < 16 ? n_keys - j0 : 16;
      if (a == 0) {  // the next block's key rows (the other heads find them in L1)
        for (int64_t j = j0 + 16; j < std::min(n_keys, j0 + 32); ++j) prefetch_row(krow[j], HD * 4);
        // and into L2 the rows kFarRows on in the stream of key rows, then value rows (the
        // value pass's first ones while the last keys are scored)
        const int64_t far0 = j0 == 0 ? std::min<int64_t>(32, n_keys) : j0 + kFarRows;
        for (int64_t j = far0; j < std::min(j0 + kFarRows + 16, 2 * n_keys); ++j)
          prefetch_row<_MM_HINT_T1>(j < n_keys ? krow[j] : vrow[j - n_keys], HD * 4);
      }
      const float* kp[16];
      for (int t = 0; t < 16; ++t) kp[t] = krow[j0 + (kTransposed[t] < nb ? kTransposed[t] : 0)];
      const __m512 s = _mm512_mul_ps(dot16_x16<HD>(qv, kp), sc);
      const __mmask16 live = static_cast<__mmask16>((1u << nb) - 1);
      _mm512_mask_storeu_ps(sa + j0, live, s);
      mxv = _mm512_mask_max_ps(mxv, live, s, mxv);  // s > mx ? s : mx
    }
    float mx = _mm512_reduce_max_ps(mxv);
    if (mx == 0.0f || mx != mx) {
      mx = -INFINITY;
      for (int64_t j = 0; j < n_keys; ++j) mx = sa[j] > mx ? sa[j] : mx;
    }
    mx = mxs[a] = max_with_sink(mx, sink ? sink + a : nullptr);
    const __m512 mv = _mm512_set1_ps(mx);
    for (int64_t j0 = 0; j0 < n_keys; j0 += 16) {
      const int64_t nb = n_keys - j0 < 16 ? n_keys - j0 : 16;
      const __mmask16 live = static_cast<__mmask16>((1u << nb) - 1);
      const __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(live, sa + j0), mv);
      _mm512_mask_storeu_ps(sa + j0, live, exp16(x));
    }
  }
  __m512 acc[NP][V];
  float sum[NP];
  for (int a = 0; a < NP; ++a) {
    sum[a] = 0.0f;
    for (int c = 0; c < V; ++c) acc[a][c] = _mm512_setzero_ps();
  }
  for (int64_t j = 0; j < n_keys; ++j) {  // keys in logical order
    if (j + 8 < n_keys) prefetch_row(vrow[j + 8], HD * 4);
    if (j + kFarRows < n_keys) prefetch_row<_MM_HINT_T1>(vrow[j + kFarRows], HD * 4);
    __m512 vv[V];
    for (int c = 0; c < V; ++c) vv[c] = _mm512_loadu_ps(vrow[j] + 16 * c);
    for (int a = 0; a < NP; ++a) {
      const float e = scores[a * n_keys + j];
      sum[a] += e;
      const __m512 ev = _mm512_set1_ps(e);
      for (int c = 0; c < V; ++c) acc[a][c] = _mm512_add_ps(acc[a][c], _mm512_mul_ps(ev, vv[c]));
    }
  }
  for (int a = 0; a < NP; ++a) {
    const __m512 sv = _mm512_set1_ps(sum_with_sink(sum[a], sink ? sink + a : nullptr, mxs[a]));
    for (int c = 0; c < V; ++c) _mm512_storeu_ps(o + a * HD + 16 * c, _mm512_div_ps(acc[a][c], sv));
  }
}

// The lanes whose key range [lo, hi) holds key j.
[[gnu::target("avx512f"), gnu::always_inline]] inline __mmask16 lanes_at(__m512i lo, __m512i hi,
                                                                         int64_t j) {
  const __m512i jv = _mm512_set1_epi32(static_cast<int32_t>(j));
  return static_cast<__mmask16>(_mm512_cmpgt_epi32_mask(hi, jv) & _mm512_cmple_epi32_mask(lo, jv));
}

// Attention of up to 16 lanes, each a (row, query head) pair of one KV head that attends the
// keys [first[lane], end[lane]) of a shared run of cache rows (a chain's prefixes, cut by a
// window), with AVX-512: the bits of attend_head over those keys for each lane. Every step of
// attend_head's chain for one (row, head) is that lane of a vector step: dot16's 16 lane sums are
// 16 vectors of lanes (each the products of its dimensions added in k order, from the first
// product; +0 added to the total, as in dot16_x16) reduced by vertical adds in dot16's pairwise
// order, then times scale; the running maximum in key order (vmaxps(s, mx) is s > mx ? s : mx for
// NaNs and zeros too), then the sink's turn (attention_sinks.hpp); exp_ref of each score minus it
// (exp16); the weighted values and their weights summed in key order, then the sink's weight. A key
// outside a lane's range is masked out of its maximum and sums, so the lane's sums start at its
// first key as attend_head's do. One query's scores for 16 keys (attend_heads_avx512) need shuffles
// to reduce across lanes; here nothing crosses lanes, and each key row is read once for all the
// lanes. krow[j], vrow[j]: key j's rows (offset to the KV head); sinks: each lane's sink, or null;
// qt: HD * 16 floats, sc: 16 per key, both 64-byte aligned scratch.
template <int HD>
[[gnu::target("avx512f")]] void attend_lanes_avx512(const float* const* q, float* const* o,
                                                    const int32_t* first, const int32_t* end,
                                                    int lanes, const float* const* krow,
                                                    const float* const* vrow, float scale,
                                                    const float* sinks, float* qt, float* sc) {
  constexpr int V = HD / 16;
  alignas(64) int32_t lo[16], hi[16];
  alignas(64) float sink[16];
  int64_t most = 0;
  for (int r = 0; r < 16; ++r) {
    lo[r] = r < lanes ? first[r] : 0;
    hi[r] = r < lanes ? end[r] : 0;
    sink[r] = sinks && r < lanes ? sinks[r] : 0.0f;
    most = std::max<int64_t>(most, hi[r]);
  }
  const __m512i key_lo = _mm512_load_si512(lo), key_hi = _mm512_load_si512(hi);
  for (int d = 0; d < HD; ++d)  // q transposed: qt[16 d + lane]
    for (int r = 0; r < 16; ++r) qt[16 * d + r] = r < lanes ? q[r][d] : 0.0f;
  const __m512 sv = _mm512_set1_ps(scale);
  __m512 mx = _mm512_set1_ps(-INFINITY);
  constexpr int64_t kAhead = 4;  // key rows come from L2 or further: ask for them early
  for (int64_t j = 0; j < most; ++j) {
    const float* kj = krow[j];
    if (j + kAhead < most) {
      prefetch_row(krow[j + kAhead], HD * 4);
      prefetch_row(vrow[j + kAhead], HD * 4);
    }
    if (j + kFarRows < most) {
      prefetch_row<_MM_HINT_T1>(krow[j + kFarRows], HD * 4);
      prefetch_row<_MM_HINT_T1>(vrow[j + kFarRows], HD * 4);
    }
    __m512 l[16];
    for (int t = 0; t < 16; ++t)
      l[t] = _mm512_mul_ps(_mm512_load_ps(qt + 16 * t), _mm512_set1_ps(kj[t]));
    for (int c = 1; c < V; ++c)
      for (int t = 0; t < 16; ++t)
        l[t] = _mm512_add_ps(l[t], _mm512_mul_ps(_mm512_load_ps(qt + 16 * (16 * c + t)),
                                                 _mm512_set1_ps(kj[16 * c + t])));
    for (int w = 8; w >= 1; w /= 2)
      for (int t = 0; t < w; ++t) l[t] = _mm512_add_ps(l[t], l[t + w]);
    const __m512 s = _mm512_mul_ps(_mm512_add_ps(l[0], _mm512_setzero_ps()), sv);
    _mm512_store_ps(sc + 16 * j, s);
    mx = _mm512_mask_max_ps(mx, lanes_at(key_lo, key_hi, j), s, mx);
  }
  const __m512 sinkv = _mm512_load_ps(sink);
  if (sinks) mx = _mm512_max_ps(sinkv, mx);  // sink > mx ? sink : mx, as max_with_sink
  for (int64_t j = 0; j < most; ++j)
    _mm512_store_ps(sc + 16 * j, exp16(_mm512_sub_ps(_mm512_load_ps(sc + 16 * j), mx)));
  __m512 sum = _mm512_setzero_ps();
  alignas(64) float out[16 * 16];
  for (int c = 0; c < V; ++c) {  // 16 dimensions at a time: 16 sums in registers
    __m512 acc[16];
    for (int t = 0; t < 16; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t j = 0; j < most; ++j) {
      const __mmask16 in = lanes_at(key_lo, key_hi, j);
      const __m512 e = _mm512_load_ps(sc + 16 * j);
      const float* vj = vrow[j] + 16 * c;
      if (c == 0) sum = _mm512_mask_add_ps(sum, in, sum, e);
      for (int t = 0; t < 16; ++t)
        acc[t] = _mm512_mask_add_ps(acc[t], in, acc[t], _mm512_mul_ps(e, _mm512_set1_ps(vj[t])));
    }
    if (c == 0 && sinks)  // as sum_with_sink: exp16 gives exp_ref's bits
      sum = _mm512_add_ps(sum, exp16(_mm512_sub_ps(sinkv, mx)));
    for (int t = 0; t < 16; ++t) _mm512_store_ps(out + 16 * t, _mm512_div_ps(acc[t], sum));
    for (int r = 0; r < lanes; ++r)
      for (int t = 0; t < 16; ++t) o[r][16 * c + t] = out[16 * t + r];
  }
}

#pragma GCC diagnostic pop

}  // namespace

namespace {

// The physical rows of a query row's keys: identity, or through its block table.
struct RowMap {
  const int32_t* table;  // this row's table (null: identity)
  int64_t block_rows;
  [[gnu::always_inline]] int64_t operator()(int64_t s) const {
    return table ? int64_t{table[s / block_rows]} * block_rows + s % block_rows : s;
  }
};

RowMap row_map(const MaskRows& mask, int64_t i) {
  if (!mask.table) return {nullptr, 1};
  return {mask.table + mask.table_begin[i], mask.block_rows};
}

// Key j's head slices for j < n (physical row slot(j)): pointers into the cache for f32, else
// into this thread's scratch, where they are decoded (kv_rows.hpp: exact, so the kernels'
// bits are those of f32 rows holding the decoded values). The source rows are asked for a
// few keys ahead, as the f32 kernels do for theirs.
template <class Slot>
void head_rows(const Mat& k, const Mat& v, int64_t kv_off, int64_t hd, int64_t n, Slot&& slot,
               const float** kr, const float** vr) {
  if (k.dtype == SPECD_DTYPE_F32) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t s = slot(j);
      kr[j] = k.f32_row(s) + kv_off;
      vr[j] = v.f32_row(s) + kv_off;
    }
    return;
  }
  thread_local std::vector<float> decoded;
  decoded.resize(static_cast<size_t>(2 * n * hd));
  const int64_t off = kv_byte_offset(k.dtype, kv_off);
  const int64_t bytes = kv_byte_offset(k.dtype, hd);
  constexpr int64_t kAhead = 8;
  for (int64_t j = 0; j < n; ++j) {
    if (j + kAhead < n) {
      const int64_t a = slot(j + kAhead);
      for (int64_t line = 0; line < bytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(k.row(a) + off + line), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(v.row(a) + off + line), _MM_HINT_T0);
      }
    }
    const int64_t s = slot(j);
    float* kd = decoded.data() + 2 * j * hd;
    decode_kv_row(k.row(s) + off, hd, k.dtype, kd);
    decode_kv_row(v.row(s) + off, hd, v.dtype, kd + hd);
    kr[j] = kd;
    vr[j] = kd + hd;
  }
}

// Key j's head slices in the cache rows' own encoding for j < n (physical row slot(j)), for the
// AVX2 kernels that read them in place: keys in out[0, n), values in out[n, 2n).
template <class Slot>
void encoded_slices(const Mat& k, const Mat& v, int64_t kv_off, int64_t n, Slot&& slot,
                    std::vector<const uint8_t*>& out) {
  out.resize(static_cast<size_t>(2 * n));
  const int64_t off = kv_byte_offset(k.dtype, kv_off);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t s = slot(j);
    out[j] = k.row(s) + off;
    out[n + j] = v.row(s) + off;
  }
}

// The first key a row attends of its `all` keys under a sliding window (0: none): the keys it
// attends are positions [first, all) of its own logical sequence, so they, and every block a
// kernel cuts them into, depend on that sequence alone.
int64_t window_first(int64_t all, uint32_t window) {
  return window != 0 && all > int64_t{window} ? all - int64_t{window} : 0;
}

// Runs of consecutive rows that share one table (one sequence's rows): lane blocks never
// cross them.
std::vector<std::pair<int64_t, int64_t>> segments(const MaskRows& mask, int64_t m) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 0; i < m;) {
    int64_t j = i + 1;
    while (j < m && mask.table && mask.table_begin[j] == mask.table_begin[i]) ++j;
    if (!mask.table) j = m;
    out.emplace_back(i, j);
    i = j;
  }
  return out;
}

}  // namespace

void attention(ThreadPool& pool, GemmKernel kernel, const Mat& q, const Mat& k, const Mat& v,
               const MaskRows& mask, const specd_attention_params& p, const AttentionExtras& x,
               const Mat& out) {
  const int64_t hd = p.head_dim;
  const uint32_t group = p.n_head / p.n_head_kv;
  // The device's kernel choice picks the instruction set (all give the same bits).
  // `avx2`: the AVX2 kernel, which reads f16 and q8_0 cache rows in place. Under AVX-512 it
  // takes those rows too: decoding them into f32 copies for the AVX-512 kernel cost more than
  // its wider vectors gain (constructed 95 M Q4_K_M after 900 tokens, Zen 5: an f16 cache
  // decoded at 0.89-0.98x the f32 cache's speed that way, and at 1.08-1.14x in place).
  const bool encoded_kv = k.dtype != SPECD_DTYPE_F32;
  const bool avx2 =
      (kernel == GemmKernel::kAvx2 || (kernel == GemmKernel::kAvx512 && encoded_kv)) &&
      attend_avx2_supports(hd) && k.dtype == v.dtype;
  const bool avx512 = kernel == GemmKernel::kAvx512 && (hd == 64 || hd == 128);
  // With AVX-512 or AVX2 a task computes, row by row, np consecutive query heads that share
  // their KV head (two when the group allows it and head_dim is 64), else one; either way each
  // (row, head) goes through the same operations whatever the task, the thread or m.
  const int np = (avx512 || avx2) && hd == 64 && group % 2 == 0 ? 2 : 1;
  const int64_t head_tasks = p.n_head / np;
  // Row i attends keys [first_key(i), first_key(i) + n_keys_of(i)) of its logical sequence.
  auto all_keys = [&](int64_t i) { return mask.prefix[i] + mask.begin[i + 1] - mask.begin[i]; };
  auto first_key = [&](int64_t i) { return window_first(all_keys(i), x.window); };
  auto n_keys_of = [&](int64_t i) { return all_keys(i) - first_key(i); };
  auto one = [&](int64_t i, uint32_t h) {
    const int64_t kv_off = static_cast<int64_t>(h / group) * hd;
    const int64_t prefix = mask.prefix[i];
    const int64_t first = first_key(i);
    const int64_t n_keys = n_keys_of(i);
    const int32_t* extra = mask.extra + mask.begin[i];
    const RowMap map = row_map(mask, i);
    const float* sink = x.sinks ? x.sinks + h : nullptr;  // np heads' from h on
    auto slot = [&](int64_t j) { return map(key_slot(first + j, prefix, extra)); };
    thread_local std::vector<float> scores, acc;
    scores.resize(static_cast<size_t>(np * n_keys));
    const float* qi = q.f32_row(i) + h * hd;
    float* o = out.f32_row(i) + h * hd;
    if (avx2) {  // reads the cache rows in their encoding
      thread_local std::vector<const uint8_t*> slices;
      encoded_slices(k, v, kv_off, n_keys, slot, slices);
      attend_heads_avx2(hd, np, k.dtype, qi, slices.data(), slices.data() + n_keys, n_keys, p.scale,
                        sink, scores.data(), o);
      return;
    }
    thread_local std::vector<const float*> rows;  // key j's rows: keys, then values
    rows.resize(static_cast<size_t>(2 * n_keys));
    const float** kr = rows.data();
    const float** vr = kr + n_keys;
    head_rows(k, v, kv_off, hd, n_keys, slot, kr, vr);
    if (!avx512) {
      acc.resize(static_cast<size_t>(hd));
      attend_head(qi, kr, vr, hd, n_keys, p.scale, sink, scores.data(), acc.data(), o);
    } else if (hd == 128) {
      attend_heads_avx512<128, 1>(qi, kr, vr, n_keys, p.scale, sink, scores.data(), o);
    } else if (np == 2) {
      attend_heads_avx512<64, 2>(qi, kr, vr, n_keys, p.scale, sink, scores.data(), o);
    } else {
      attend_heads_avx512<64, 1>(qi, kr, vr, n_keys, p.scale, sink, scores.data(), o);
    }
  };
  // Rows that attend their prefix only (a chain: plain decoding and verification) go as lanes
  // of one KV head instead, `width` (row, query head) pairs of one sequence at a time: the same
  // bits, each key row read once for all of them. AVX-512 takes 16 lanes (attend_lanes_avx512,
  // over f32 rows, decoded ones for f16 and q8_0: on a Xeon 6 VM that beat 8 lanes reading them
  // in place, 368 against 405-432 us a layer), AVX2 8 lanes of rows in their encoding
  // (attend_lanes_avx2). After 900 tokens of the constructed 95 M Q4_K_M (GQA group 2):
  // - AVX-512: eight rows took 0.84x as long and sixteen 0.84x (Zen 4 VM); four rows (8 lanes)
  //   1.03x, so calls of fewer than 12 lanes stay as they were;
  // - AVX2 (Xeon 6 VM): four rows took 0.68x (f32 cache), 0.78x (f16), 0.52x (q8_0), eight rows
  //   0.71x, 0.69x, 0.52x; three rows (6 lanes) 1.01x and two 1.4x, so calls of fewer than 8
  //   lanes stay as they were.
  const bool lanes8 = avx2 && !avx512;  // else AVX-512's 16 lanes, where it takes the head_dim
  const int64_t width = avx512 ? 16 : 8, min_lanes = avx512 ? 12 : 8;
  const int64_t lane_rows = group <= width ? width / group : 1;  // rows per lane block
  struct Segment {
    int64_t i0, i1;
    bool lanes;
    int64_t blocks;  // lane blocks per KV head
    int64_t first;   // its first unit
  };
  std::vector<Segment> segs;
  int64_t n_units = 0, work = 0;
  for (auto [i0, i1] : segments(mask, q.rows)) {
    bool prefix_only = true;
    for (int64_t i = i0; i < i1 && prefix_only; ++i)
      prefix_only = mask.begin[i + 1] == mask.begin[i];
    for (int64_t i = i0; i < i1; ++i) work += n_keys_of(i) + 1;
    const bool fills = group <= width && (i1 - i0) * group >= min_lanes;
    Segment sg{i0, i1, (avx512 || lanes8) && prefix_only && fills, 0, n_units};
    sg.blocks = sg.lanes ? (i1 - i0 + lane_rows - 1) / lane_rows : 0;
    n_units += sg.lanes ? static_cast<int64_t>(p.n_head_kv) * sg.blocks : head_tasks * (i1 - i0);
    segs.push_back(sg);
  }
  auto lane_block = [&](const Segment& sg, int64_t u) {  // KV head u / blocks, its rows u % blocks
    const uint32_t g = static_cast<uint32_t>(u / sg.blocks);
    const int64_t i0 = sg.i0 + u % sg.blocks * lane_rows, i1 = std::min(sg.i1, i0 + lane_rows);
    const float* ql[16];
    float* ol[16];
    int32_t lo[16], hi[16];  // each lane's keys [lo, hi) of its prefix, from `base` on
    float sk[16];
    int n = 0;
    int64_t base = first_key(i0);  // the earliest key of the block's rows
    for (int64_t i = i0 + 1; i < i1; ++i) base = std::min(base, first_key(i));
    for (int64_t i = i0; i < i1; ++i)
      for (uint32_t a = 0; a < group; ++a, ++n) {
        const int64_t h = static_cast<int64_t>(g) * group + a;
        ql[n] = q.f32_row(i) + h * hd;
        ol[n] = out.f32_row(i) + h * hd;
        lo[n] = static_cast<int32_t>(first_key(i) - base);
        hi[n] = static_cast<int32_t>(mask.prefix[i] - base);
        sk[n] = x.sinks ? x.sinks[h] : 0.0f;
      }
    thread_local std::vector<float> scratch;
    int64_t keys = 0;
    for (int r = 0; r < n; ++r) keys = std::max<int64_t>(keys, hi[r]);
    scratch.resize(static_cast<size_t>(width * (hd + keys) + 16));
    float* qt = scratch.data() + (16 - reinterpret_cast<uintptr_t>(scratch.data()) / 4 % 16) % 16;
    float* sc = qt + width * hd;
    const int64_t kv_off = static_cast<int64_t>(g) * hd;
    const RowMap map = row_map(mask, i0);  // the segment's one table
    const float* sinks = x.sinks ? sk : nullptr;
    if (lanes8) {  // the rows in their encoding
      thread_local std::vector<const uint8_t*> slices;
      encoded_slices(
          k, v, kv_off, keys, [&](int64_t j) { return map(base + j); }, slices);
      attend_lanes_avx2(hd, k.dtype, ql, ol, lo, hi, n, slices.data(), slices.data() + keys,
                        p.scale, sinks, qt, sc);
      return;
    }
    thread_local std::vector<const float*> rows;  // key j's rows: keys, then values
    rows.resize(static_cast<size_t>(2 * keys));
    head_rows(
        k, v, kv_off, hd, keys, [&](int64_t j) { return map(base + j); }, rows.data(),
        rows.data() + keys);
    if (hd == 128)
      attend_lanes_avx512<128>(ql, ol, lo, hi, n, rows.data(), rows.data() + keys, p.scale, sinks,
                               qt, sc);
    else
      attend_lanes_avx512<64>(ql, ol, lo, hi, n, rows.data(), rows.data() + keys, p.scale, sinks,
                              qt, sc);
  };
  auto units = [&](int64_t u0, int64_t u1) {
    size_t s = 0;
    for (int64_t u = u0; u < u1; ++u) {
      while (s + 1 < segs.size() && segs[s + 1].first <= u) ++s;
      while (segs[s].first > u) --s;
      const Segment& sg = segs[s];
      const int64_t w = u - sg.first, rows = sg.i1 - sg.i0;
      if (sg.lanes)
        lane_block(sg, w);
      else
        one(sg.i0 + w % rows, static_cast<uint32_t>(w / rows) * np);
    }
  };
  // The work of a task grows with its keys: one decoded token over a long cache is worth
  // spreading over the threads although it has few (row, head) tasks.
  if (work * p.n_head * hd < (int64_t{1} << 16)) {
    units(0, n_units);
  } else {
    run_shared(pool, n_units, 1, units);
  }
}

void set_rows(const Mat& src, const int32_t* indices, const Mat& dst, int64_t row_bytes) {
  for (int64_t i = 0; i < src.rows; ++i) {
    if (src.dtype == dst.dtype)
      std::memcpy(dst.row(indices[i]), src.row(i), static_cast<size_t>(row_bytes));
    else
      encode_kv_row(src.f32_row(i), src.cols, dst.dtype, dst.row(indices[i]));
  }
}

}  // namespace specd::cpu
