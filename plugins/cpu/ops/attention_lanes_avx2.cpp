// AVX2 attention of up to 8 lanes, each a (row, query head) pair of one KV head
// (attention_avx2.hpp): the bits of ops.cpp's attend_head over each lane's keys, every step of
// its chain for one (row, head) being that lane of a vector step, as attend_lanes_avx512 does
// for 16 lanes:
//
// - dot16's 16 lane sums are 16 vectors of lanes, each the products of its dimensions added in
//   k order from the first product (+0 added to the total: dot16 starts from +0, which only
//   turns a zero total's sign), reduced by vertical adds in dot16's pairwise order (lanes
//   l + 8, l + 4, l + 2, l + 1), then times scale;
// - the running maximum in key order (vmaxps(s, mx) is s > mx ? s : mx for NaNs and zeros too),
//   then the sink's turn (attention_sinks.hpp); exp_ref (exp8) of each score minus it;
// - the weighted values and their weights summed in key order, then the sink's weight.
//
// A key outside a lane's range adds an all-zero-bits product instead (+0: the sums start at +0
// and can never be -0, so adding +0 leaves them as they are) and is kept out of its maximum.
// Each key row is read once for all the lanes, in its encoding (kv_row_loads_avx2.hpp), where the
// per-head kernel reads it once per row (and query head, unless two share it). Value rows are taken
// 32 keys at a time, decoded into scratch once, then summed 8 dimensions per pass, so that the
// passes find them in L1.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ops/attention_avx2.hpp"
#include "ops/kv_row_loads_avx2.hpp"
#include "ops/vexp.hpp"

namespace specd::cpu {
namespace {

constexpr int64_t kChunk = 32;  // value rows per pass group

// Key j's slice as f32: the row itself for f32 rows, else decoded into `buf`.
template <int HD, class Row>
[[gnu::target("avx2,f16c"), gnu::always_inline]] inline const float* as_f32(const uint8_t* row,
                                                                            float* buf) {
  if constexpr (std::is_same_v<Row, F32Row>) {
    return reinterpret_cast<const float*>(row);
  } else {
    for (int i = 0; i < HD; i += 8) _mm256_store_ps(buf + i, Row::load8(row, i));
    return buf;
  }
}

// The lanes whose key range [lo, hi) holds key j, as all-ones lanes.
[[gnu::target("avx2"), gnu::always_inline]] inline __m256 lanes_at(__m256i lo, __m256i hi,
                                                                   int64_t j) {
  const __m256i jv = _mm256_set1_epi32(static_cast<int32_t>(j));
  return _mm256_castsi256_ps(
      _mm256_andnot_si256(_mm256_cmpgt_epi32(lo, jv), _mm256_cmpgt_epi32(hi, jv)));
}

// Lane sums t0 .. t0 + N - 1 of dot16 (lane t: dimensions t, t + 16, ...) for the 8 lanes'
// queries qt (transposed) with key kj, each in k order from its first product: N chains.
template <int HD, int N>
[[gnu::target("avx2,f16c"), gnu::always_inline]] inline void lane_sums(const float* qt,
                                                                       const float* kj, int t0,
                                                                       __m256* l) {
#pragma GCC unroll 8
  for (int t = 0; t < N; ++t)
    l[t] = _mm256_mul_ps(_mm256_load_ps(qt + 8 * (t0 + t)), _mm256_broadcast_ss(kj + t0 + t));
#pragma GCC unroll 16
  for (int c = 1; c < HD / 16; ++c)
#pragma GCC unroll 8
    for (int t = 0; t < N; ++t)
      l[t] = _mm256_add_ps(l[t], _mm256_mul_ps(_mm256_load_ps(qt + 8 * (16 * c + t0 + t)),
                                               _mm256_broadcast_ss(kj + 16 * c + t0 + t)));
}

// The 8 lanes' scores for key kj: dot16 of each lane's query (qt, transposed) times scale.
// Lanes 8 .. 15 go in two groups of four, each added to its lane l - 8 when complete, so that
// the sums fit the 16 registers.
template <int HD>
[[gnu::target("avx2,f16c"), gnu::always_inline]] inline __m256 scores8(const float* qt,
                                                                       const float* kj,
                                                                       __m256 scale) {
  __m256 l[8], h[4];
  lane_sums<HD, 8>(qt, kj, 0, l);
#pragma GCC unroll 2
  for (int g = 0; g < 2; ++g) {
    lane_sums<HD, 4>(qt, kj, 8 + 4 * g, h);
#pragma GCC unroll 4
    for (int t = 0; t < 4; ++t) l[4 * g + t] = _mm256_add_ps(l[4 * g + t], h[t]);
  }
#pragma GCC unroll 4
  for (int w = 4; w >= 1; w /= 2)
#pragma GCC unroll 4
    for (int t = 0; t < w; ++t) l[t] = _mm256_add_ps(l[t], l[t + w]);
  return _mm256_mul_ps(_mm256_add_ps(l[0], _mm256_setzero_ps()), scale);
}

template <int HD, class Row>
[[gnu::target("avx2,f16c")]] void attend_lanes(const float* const* q, float* const* o,
                                               const int32_t* first, const int32_t* end, int lanes,
                                               const uint8_t* const* krow,
                                               const uint8_t* const* vrow, float scale,
                                               const float* sinks, float* qt, float* sc) {
  constexpr int64_t kBytes = Row::bytes(HD);
  alignas(32) int32_t lo[8], hi[8];
  alignas(32) float sink[8];
  int64_t most = 0, least = 0;
  for (int r = 0; r < lanes; ++r) most = std::max<int64_t>(most, end[r]);
  least = most;
  for (int r = 0; r < lanes; ++r) least = std::min<int64_t>(least, first[r]);
  int64_t all_lo = least, all_hi = most;  // keys every lane attends: no masks there
  for (int r = 0; r < 8; ++r) {
    // A lane past `lanes` (its output unused, its query 0) takes every key of the block.
    lo[r] = r < lanes ? first[r] : static_cast<int32_t>(least);
    hi[r] = r < lanes ? end[r] : static_cast<int32_t>(most);
    sink[r] = sinks && r < lanes ? sinks[r] : 0.0f;
    all_lo = std::max<int64_t>(all_lo, lo[r]);
    all_hi = std::min<int64_t>(all_hi, hi[r]);
  }
  auto every_lane = [&](int64_t j) { return j >= all_lo && j < all_hi; };
  const __m256i key_lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  const __m256i key_hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  for (int d = 0; d < HD; ++d)  // q transposed: qt[8 d + lane]
    for (int r = 0; r < 8; ++r) qt[8 * d + r] = r < lanes ? q[r][d] : 0.0f;
  alignas(32) float decoded[kChunk * HD];
  const __m256 sv = _mm256_set1_ps(scale);
  __m256 mx = _mm256_set1_ps(-INFINITY);
  constexpr int64_t kAhead = 4;  // key rows come from L2 or further: ask for them early
  for (int64_t j = 0; j < most; ++j) {
    if (j + kAhead < most) prefetch<kBytes>(krow[j + kAhead]);
    if (j + kFarRowsAvx2 < most) {
      prefetch<kBytes, _MM_HINT_T1>(krow[j + kFarRowsAvx2]);
      prefetch<kBytes, _MM_HINT_T1>(vrow[j + kFarRowsAvx2]);
    }
    const __m256 s = scores8<HD>(qt, as_f32<HD, Row>(krow[j], decoded), sv);
    _mm256_store_ps(sc + 8 * j, s);
    const __m256 up = _mm256_max_ps(s, mx);  // s > mx ? s : mx
    mx = every_lane(j) ? up : _mm256_blendv_ps(mx, up, lanes_at(key_lo, key_hi, j));
  }
  const __m256 sinkv = _mm256_load_ps(sink);
  if (sinks) mx = _mm256_max_ps(sinkv, mx);  // sink > mx ? sink : mx, as max_with_sink
  for (int64_t j = 0; j < most; ++j)
    _mm256_store_ps(sc + 8 * j, exp8(_mm256_sub_ps(_mm256_load_ps(sc + 8 * j), mx)));
  __m256 sum = _mm256_setzero_ps();
  for (int64_t j = 0; j < most; ++j) {
    const __m256 e = _mm256_load_ps(sc + 8 * j);
    sum = _mm256_add_ps(sum, every_lane(j) ? e : _mm256_and_ps(e, lanes_at(key_lo, key_hi, j)));
  }
  if (sinks) sum = _mm256_add_ps(sum, exp8(_mm256_sub_ps(sinkv, mx)));  // as sum_with_sink
  alignas(32) float acc[HD * 8] = {};  // dimension d's sums: acc[8 d + lane]
  const float* vj[kChunk];
  for (int64_t j0 = 0; j0 < most; j0 += kChunk) {
    const int64_t n = std::min(kChunk, most - j0);
    for (int64_t j = 0; j < n; ++j) {
      if (j0 + j + kAhead < most) prefetch<kBytes>(vrow[j0 + j + kAhead]);
      vj[j] = as_f32<HD, Row>(vrow[j0 + j], decoded + j * HD);
    }
    for (int d0 = 0; d0 < HD; d0 += 8) {  // 8 dimensions' sums in registers
      __m256 a[8];
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) a[t] = _mm256_load_ps(acc + 8 * (d0 + t));
      for (int64_t j = 0; j < n; ++j) {
        const __m256 e = _mm256_load_ps(sc + 8 * (j0 + j));
        if (every_lane(j0 + j)) {
#pragma GCC unroll 8
          for (int t = 0; t < 8; ++t)
            a[t] = _mm256_add_ps(a[t], _mm256_mul_ps(e, _mm256_broadcast_ss(vj[j] + d0 + t)));
        } else {
          const __m256 in = lanes_at(key_lo, key_hi, j0 + j);
#pragma GCC unroll 8
          for (int t = 0; t < 8; ++t)
            a[t] = _mm256_add_ps(
                a[t], _mm256_and_ps(_mm256_mul_ps(e, _mm256_broadcast_ss(vj[j] + d0 + t)), in));
        }
      }
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) _mm256_store_ps(acc + 8 * (d0 + t), a[t]);
    }
  }
  alignas(32) float out[8];
  for (int d = 0; d < HD; ++d) {
    _mm256_store_ps(out, _mm256_div_ps(_mm256_load_ps(acc + 8 * d), sum));
    for (int r = 0; r < lanes; ++r) o[r][d] = out[r];
  }
}

template <int HD>
void lanes_dtype(specd_dtype dtype, const float* const* q, float* const* o, const int32_t* first,
                 const int32_t* end, int lanes, const uint8_t* const* krow,
                 const uint8_t* const* vrow, float scale, const float* sinks, float* qt,
                 float* sc) {
  if (dtype == SPECD_DTYPE_F16)
    attend_lanes<HD, F16Row>(q, o, first, end, lanes, krow, vrow, scale, sinks, qt, sc);
  else if (dtype == SPECD_DTYPE_Q8_0)
    attend_lanes<HD, Q8Row>(q, o, first, end, lanes, krow, vrow, scale, sinks, qt, sc);
  else
    attend_lanes<HD, F32Row>(q, o, first, end, lanes, krow, vrow, scale, sinks, qt, sc);
}

}  // namespace

void attend_lanes_avx2(int64_t head_dim, specd_dtype dtype, const float* const* q, float* const* o,
                       const int32_t* first, const int32_t* end, int lanes,
                       const uint8_t* const* krow, const uint8_t* const* vrow, float scale,
                       const float* sinks, float* qt, float* sc) {
  switch (head_dim) {
    case 64:
      return lanes_dtype<64>(dtype, q, o, first, end, lanes, krow, vrow, scale, sinks, qt, sc);
    case 80:
      return lanes_dtype<80>(dtype, q, o, first, end, lanes, krow, vrow, scale, sinks, qt, sc);
    case 96:
      return lanes_dtype<96>(dtype, q, o, first, end, lanes, krow, vrow, scale, sinks, qt, sc);
    case 128:
      return lanes_dtype<128>(dtype, q, o, first, end, lanes, krow, vrow, scale, sinks, qt, sc);
    default:
      return lanes_dtype<256>(dtype, q, o, first, end, lanes, krow, vrow, scale, sinks, qt, sc);
  }
}

}  // namespace specd::cpu
