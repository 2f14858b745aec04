// AVX2 attention (attention_avx2.hpp): attend_head's bits (ops.cpp) for each query head.
//
// Scores come 8 keys at a time: each key's 16 dot16 lanes as two vectors (lanes 0..7 and
// 8..15, each the products of its dimensions added in k order from +0, as dot16 does), then
// dot16's pairwise reduction (lanes l + 8, l + 4, l + 2, l + 1) done for the 8 keys together by
// shuffles, each add taking the same two lanes of the same key, the lower one first; times
// scale. The largest score, per lane then across lanes, is the value attend_head's scan in key
// order finds (NaN never wins either way; equal scores have equal bits but for zeros of both
// signs, so a zero maximum is rescanned in key order), then the head's sink, if any
// (attention_sinks.hpp); exp_ref (exp8) of each score minus it; then each key's value row is
// read once for the query heads, whose sums of e * value go on in key order, 64 floats of
// accumulators at a time, and the sum of e in key order, then the sink's weight.
//
// A cache row is read in its encoding and decoded in registers with kv_rows.hpp's exact
// decoding (a half is an f32; a q8_0 value is d·q, one exact product), so every encoding gets
// the bits of f32 rows holding the decoded values. On a 2-core Zen 3 VM, four sequences of the
// constructed 1.5 B model after 140 tokens of f16 cache took 354 us of attention a layer, against
// 1561 us for the portable loop over rows decoded into scratch.
#include "ops/attention_avx2.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "ops/attention_sinks.hpp"
#include "ops/kv_row_loads_avx2.hpp"
#include "ops/vexp.hpp"

namespace specd::cpu {
namespace {

// The key that goes in slot t of dot16_x8's block: its score lands in lane t of the result.
constexpr int kSlotKey[8] = {0, 4, 1, 5, 2, 6, 3, 7};

// dot16 of query q with the 8 keys kp[0..7] (in kSlotKey's order): lane t = key t's dot16.
template <int HD, class Row>
[[gnu::target("avx2,f16c"), gnu::always_inline]] inline __m256 dot16_x8(const float* q,
                                                                        const uint8_t* const* kp) {
  __m256 s[8];
  for (int t = 0; t < 8; ++t) {
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (int c = 0; c < HD / 16; ++c) {
      lo = _mm256_add_ps(lo, _mm256_mul_ps(_mm256_loadu_ps(q + 16 * c), Row::load8(kp[t], 16 * c)));
      hi = _mm256_add_ps(
          hi, _mm256_mul_ps(_mm256_loadu_ps(q + 16 * c + 8), Row::load8(kp[t], 16 * c + 8)));
    }
    s[t] = _mm256_add_ps(lo, hi);  // lanes l + 8
  }
  __m256 u[4];
  for (int p = 0; p < 4; ++p)  // lanes l + 4: [slot 2p] x 4 lanes, [slot 2p + 1] x 4 lanes
    u[p] = _mm256_add_ps(_mm256_permute2f128_ps(s[2 * p], s[2 * p + 1], 0x20),
                         _mm256_permute2f128_ps(s[2 * p], s[2 * p + 1], 0x31));
  // lanes l + 2: 128-bit half h holds slots h and 2 + h (then 4 + h and 6 + h) x 2 lanes
  const __m256 w0 = _mm256_add_ps(_mm256_shuffle_ps(u[0], u[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 w1 = _mm256_add_ps(_mm256_shuffle_ps(u[2], u[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm256_shuffle_ps(u[2], u[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // lanes l + 1: lane 4h + i holds slot 2i + h, which is key 4h + i
  return _mm256_add_ps(_mm256_shuffle_ps(w0, w1, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm256_shuffle_ps(w0, w1, _MM_SHUFFLE(3, 1, 3, 1)));
}

[[gnu::target("avx2,f16c")]] inline float max_of_lanes(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

// The most dimensions, a multiple of 8 dividing HD, whose sums for NP heads fit 8 registers.
constexpr int dims_per_pass(int hd, int np) {
  int d = 64 / np;
  while (hd % d != 0) d -= 8;
  return d;
}

template <int HD, int NP, class Row>
[[gnu::target("avx2,f16c")]] void attend(const float* q, const uint8_t* const* krow,
                                         const uint8_t* const* vrow, int64_t n_keys, float scale,
                                         const float* sink, float* scores, float* o) {
  constexpr int64_t kBytes = Row::bytes(HD);
  const __m256 sc = _mm256_set1_ps(scale);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  float mxs[NP];
  for (int a = 0; a < NP; ++a) {
    const float* qa = q + a * HD;
    float* sa = scores + a * n_keys;
    __m256 mxv = _mm256_set1_ps(-INFINITY);
    for (int64_t j0 = 0; j0 < n_keys; j0 += 8) {
      const int64_t nb = std::min<int64_t>(n_keys - j0, 8);
      if (a == 0) {  // the next block's key rows (the other head finds them in L1)
        for (int64_t j = j0 + 8; j < std::min(n_keys, j0 + 16); ++j) prefetch<kBytes>(krow[j]);
        // into L2 the rows kFarRowsAvx2 on in the stream of key rows, then value rows
        const int64_t far0 = j0 == 0 ? std::min<int64_t>(16, n_keys) : j0 + kFarRowsAvx2;
        for (int64_t j = far0; j < std::min(j0 + kFarRowsAvx2 + 8, 2 * n_keys); ++j)
          prefetch<kBytes, _MM_HINT_T1>(j < n_keys ? krow[j] : vrow[j - n_keys]);
      }
      const uint8_t* kp[8];
      for (int t = 0; t < 8; ++t) kp[t] = krow[j0 + (kSlotKey[t] < nb ? kSlotKey[t] : 0)];
      __m256 s = _mm256_mul_ps(dot16_x8<HD, Row>(qa, kp), sc);
      if (nb == 8) {
        _mm256_storeu_ps(sa + j0, s);
      } else {
        const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(nb)), lane);
        _mm256_maskstore_ps(sa + j0, live, s);
        s = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), s, _mm256_castsi256_ps(live));
      }
      mxv = _mm256_max_ps(s, mxv);  // s > mx ? s : mx
    }
    float mx = max_of_lanes(mxv);
    if (mx == 0.0f || mx != mx) {
      mx = -INFINITY;
      for (int64_t j = 0; j < n_keys; ++j) mx = sa[j] > mx ? sa[j] : mx;
    }
    mx = mxs[a] = max_with_sink(mx, sink ? sink + a : nullptr);
    const __m256 mv = _mm256_set1_ps(mx);
    int64_t j = 0;
    for (; j + 8 <= n_keys; j += 8)
      _mm256_storeu_ps(sa + j, exp8(_mm256_sub_ps(_mm256_loadu_ps(sa + j), mv)));
    for (; j < n_keys; ++j) sa[j] = exp_ref(sa[j] - mx);
  }
  // The weighted values, D dimensions of every head per pass over the keys (at most 8
  // registers of sums); the sums of e on the first pass.
  constexpr int D = dims_per_pass(HD, NP), R = D / 8;
  float sum[NP] = {};
  for (int d0 = 0; d0 < HD; d0 += D) {
    __m256 acc[NP][R];
    for (int a = 0; a < NP; ++a)
      for (int c = 0; c < R; ++c) acc[a][c] = _mm256_setzero_ps();
    for (int64_t j = 0; j < n_keys; ++j) {  // keys in logical order
      if (d0 == 0) {
        if (j + 8 < n_keys) prefetch<kBytes>(vrow[j + 8]);
        if (j + kFarRowsAvx2 < n_keys) prefetch<kBytes, _MM_HINT_T1>(vrow[j + kFarRowsAvx2]);
      }
      __m256 vv[R];
      for (int c = 0; c < R; ++c) vv[c] = Row::load8(vrow[j], d0 + 8 * c);
      for (int a = 0; a < NP; ++a) {
        const float e = scores[a * n_keys + j];
        if (d0 == 0) sum[a] += e;
        const __m256 ev = _mm256_set1_ps(e);
        for (int c = 0; c < R; ++c) acc[a][c] = _mm256_add_ps(acc[a][c], _mm256_mul_ps(ev, vv[c]));
      }
    }
    if (d0 == 0)  // the sums of e are complete
      for (int a = 0; a < NP; ++a)
        sum[a] = sum_with_sink(sum[a], sink ? sink + a : nullptr, mxs[a]);
    for (int a = 0; a < NP; ++a) {
      const __m256 sv = _mm256_set1_ps(sum[a]);
      for (int c = 0; c < R; ++c)
        _mm256_storeu_ps(o + a * HD + d0 + 8 * c, _mm256_div_ps(acc[a][c], sv));
    }
  }
}

template <int HD, int NP>
void attend_dtype(specd_dtype dtype, const float* q, const uint8_t* const* krow,
                  const uint8_t* const* vrow, int64_t n_keys, float scale, const float* sink,
                  float* scores, float* o) {
  if (dtype == SPECD_DTYPE_F16)
    attend<HD, NP, F16Row>(q, krow, vrow, n_keys, scale, sink, scores, o);
  else if (dtype == SPECD_DTYPE_Q8_0)
    attend<HD, NP, Q8Row>(q, krow, vrow, n_keys, scale, sink, scores, o);
  else
    attend<HD, NP, F32Row>(q, krow, vrow, n_keys, scale, sink, scores, o);
}

}  // namespace

bool attend_avx2_supports(int64_t head_dim) {
  return head_dim == 64 || head_dim == 80 || head_dim == 96 || head_dim == 128 || head_dim == 256;
}

void attend_heads_avx2(int64_t head_dim, int np, specd_dtype dtype, const float* q,
                       const uint8_t* const* krow, const uint8_t* const* vrow, int64_t n_keys,
                       float scale, const float* sink, float* scores, float* o) {
  switch (head_dim) {
    case 64:
      return np == 2 ? attend_dtype<64, 2>(dtype, q, krow, vrow, n_keys, scale, sink, scores, o)
                     : attend_dtype<64, 1>(dtype, q, krow, vrow, n_keys, scale, sink, scores, o);
    case 80:
      return attend_dtype<80, 1>(dtype, q, krow, vrow, n_keys, scale, sink, scores, o);
    case 96:
      return attend_dtype<96, 1>(dtype, q, krow, vrow, n_keys, scale, sink, scores, o);
    case 128:
      return attend_dtype<128, 1>(dtype, q, krow, vrow, n_keys, scale, sink, scores, o);
    default:
      return attend_dtype<256, 1>(dtype, q, krow, vrow, n_keys, scale, sink, scores, o);
  }
}

}  // namespace specd::cpu
