// The integer family on AVX-512 (F/BW/VL/DQ + VNNI; called only after that CPU check). q4_K,
// q6_K and q8_0 have column-interleaved kernels of their own (qint_q4k_avx512.cpp,
// qint_q6k_avx512.cpp, qint_q8_0_avx512.cpp). For m > 1, q5_K and the 32-value types without a min
// decode each weight block (pair of blocks) into registers and apply it to up to 16 (q5_K) or 8
// rows of x (q5_K: 4 vpdpbusd, 2 vpackssdw, 2 vpdpwssd per row and block); q4_1 / q5_1 prepare each
// weight row into the task's scratch and apply it four rows at a time. Either way the decoding work
// is shared by the m rows. The arithmetic is qint.hpp's, lane for lane: the bits equal the generic
// kernel's.
#include <immintrin.h>

#include "qint/avx512/qint_interleave_avx512.hpp"
#include "qint/qint.hpp"
#include "qint/qint_lowbit.hpp"
#include "qint/qint_q4k.hpp"
#include "qint/qint_q6k.hpp"
#include "qint/qint_q8_0.hpp"
#include "qint/qint_reduce.hpp"
#include "qint/qint_scale.hpp"
#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu::qint {
namespace {

// Two consecutive floats (4-byte aligned only) into the low 64 bits; the unaligned-load
// intrinsic, since _mm_load_sd would dereference a double*.
inline __m128i load_two_floats(const float* p) {
  return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
}

constexpr int kRows = 4;  // rows of x per register tile

// y[r * ldy] = reduce16(acc[r]) for r < MR. From 2 rows on, the rows share one tree of
// shuffles: every addition is reduce16's (lane l + 8, then l + 4, l + 2, l + 1), row by row.
template <int MR>
[[gnu::always_inline]] inline void store_reduced(const __m512* acc, float* y, int64_t ldy) {
  if constexpr (MR == 1) {
    y[0] = reduce16(acc[0]);
  } else {
    __m512 v[8];
    for (int r = 0; r < 8; ++r) v[r] = r < MR ? acc[r] : _mm512_setzero_ps();
    __m512 u[4];  // rows 2p, 2p + 1: lanes l + l + 8 (l < 8) in 128-bit lanes 0-1 and 2-3
    for (int p = 0; p < 4; ++p)
      u[p] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_f32x4(v[2 * p], v[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    __m512 w[2];  // rows 4h + t: lanes l + l + 4 (l < 4) in 128-bit lane t
    for (int h = 0; h < 2; ++h)
      w[h] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * h], u[2 * h + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(u[2 * h], u[2 * h + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    // 128-bit lane t: rows t and 4 + t, lanes l + l + 2 (l < 2) each
    const __m512 x = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 z = _mm512_add_ps(_mm512_shuffle_ps(x, x, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(x, x, _MM_SHUFFLE(3, 1, 3, 1)));
    alignas(64) float out[16];  // row t in lane 4t, row 4 + t in lane 4t + 1
    _mm512_store_ps(out, z);
    for (int r = 0; r < MR; ++r) y[r * ldy] = out[4 * (r & 3) + (r >> 2)];
  }
}

// A prepared pair of 32-value blocks without a min: the integers (block 2t in bytes 0..31, 2t + 1
// in 32..63, zero when absent), -128 times the sum of each 4 quants, the weight scales in lanes
// 0..7 and 8..15. With y + 128 unsigned, dpbusd(-128 sum w, y + 128, w) = sum w y exactly.
struct alignas(64) Q8Prep {
  __m512i w;
  __m512i corr;
  __m512 dw;
};

// The 32 integers of a block without a min (ggml::block32_int), as int8.
template <uint32_t T>
__m256i block32_ints(const uint8_t* b) {
  constexpr int qs_at = T == ggml::kQ5_0 ? 6 : T == ggml::kMXFP4 ? 1 : 2;
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + qs_at));
  const __m128i low4 = _mm_set1_epi8(15);
  const __m256i nib = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low4),
                                       _mm_and_si128(q, low4));  // element order
  if constexpr (T == ggml::kQ4_0) {
    return _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
  } else if constexpr (T == ggml::kQ5_0) {
    const __m256i five = _mm256_maskz_mov_epi8(ggml::load_u32(b + 2), _mm256_set1_epi8(16));
    return _mm256_sub_epi8(_mm256_or_si256(nib, five), _mm256_set1_epi8(16));
  } else {
    static_assert(T == ggml::kIQ4_NL || T == ggml::kMXFP4);
    alignas(16) int8_t levels[16];
    for (unsigned i = 0; i < 16; ++i)
      levels[i] =
          static_cast<int8_t>(T == ggml::kMXFP4 ? ggml::mxfp4_level(i) : ggml::iq4_level(i));
    const __m128i l = _mm_load_si128(reinterpret_cast<const __m128i*>(levels));
    return _mm256_shuffle_epi8(_mm256_set_m128i(l, l), nib);
  }
}

// [scale_32<T> at a x 8, at b x 8] (b absent: 0), exactly: two blocks' d, or (q4_1, q5_1,
// whose m is an f16 as their d) their m.
template <uint32_t T>
__m512 scales2(const uint8_t* a, const uint8_t* b, bool two) {
  const float fa = scale_32<T>(a);
  const float fb = two ? scale_32<T>(b) : 0.0f;
  return _mm512_insertf32x8(_mm512_set1_ps(fa), _mm256_set1_ps(fb), 1);
}

// Blocks 2t and 2t + 1 of a row, prepared.
template <uint32_t T>
Q8Prep pair_32(const uint8_t* row, int64_t t, int64_t nblocks) {
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  const uint8_t* b0 = row + bytes * (2 * t);
  const bool two = 2 * t + 1 < nblocks;
  const __m256i lo = block32_ints<T>(b0);
  const __m256i hi = two ? block32_ints<T>(b0 + bytes) : _mm256_setzero_si256();
  Q8Prep p;
  p.w = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  p.corr = _mm512_sub_epi32(
      _mm512_setzero_si512(),
      _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), p.w));
  p.dw = scales2<T>(b0, b0 + bytes, two);
  return p;
}

// acc += the pair's terms for one row of x (qint.hpp's lanes of the 32-value types).
inline __m512 step_32(const Q8Prep& p, int64_t t, int64_t nblocks, const QArgs& a, int64_t row,
                      __m512 acc) {
  const int64_t k = a.k;
  const __m512i pair = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const __mmask16 lanes = 2 * t + 1 < nblocks ? 0xffff : 0x00ff;
  const __m512i y = _mm512_xor_si512(_mm512_loadu_si512(a.x.q + row * k + 64 * t),
                                     _mm512_set1_epi8(static_cast<char>(0x80)));
  const __m512i isum = _mm512_dpbusd_epi32(p.corr, y, p.w);
  const __m512 dy = _mm512_permutexvar_ps(
      pair,
      _mm512_castps128_ps512(_mm_castsi128_ps(load_two_floats(a.x.d + row * (k / 32) + 2 * t))));
  return _mm512_mask3_fmadd_ps(_mm512_mul_ps(p.dw, dy), _mm512_cvtepi32_ps(isum), acc, lanes);
}

// Asks for weight row j + kAhead while row j is computed: the rows of a task are one
// sequential stream, and decoding is memory bound for m = 1.
constexpr int kAhead = 4;
void prefetch_row(const QArgs& a, int64_t j, int64_t j1) {
  if (j + kAhead >= j1) return;
  const char* p = reinterpret_cast<const char*>(a.w + (j + kAhead) * a.ldw);
  for (int64_t o = 0; o < a.ldw; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
}

// Asks for the bytes kStreamAhead after [p, p + bytes), p being where a task's sequential
// weight stream is read now: spread over the blocks, the requests never queue up at once.
constexpr int64_t kStreamAhead = 8192;
inline void stream_ahead(const uint8_t* p, int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p) + kStreamAhead + o, _MM_HINT_T0);
}

// A prepared pair of q4_1 / q5_1 blocks: the unsigned quants (block 2t in bytes 0..31,
// 2t + 1 in 32..63, zero when absent) and the scales d and m in lanes 0..7 and 8..15.
struct alignas(64) MinPrep {
  __m512i w;
  __m512 dw, mw;
};

// The 32 unsigned quants of a q4_1 / q5_1 block (ggml::block32_quant_min).
template <uint32_t T>
__m256i block32_quants_min(const uint8_t* b) {
  constexpr int qs_at = T == ggml::kQ5_1 ? 8 : 4;
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + qs_at));
  const __m128i low4 = _mm_set1_epi8(15);
  const __m256i nib =
      _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low4), _mm_and_si128(q, low4));
  if constexpr (T == ggml::kQ4_1) return nib;
  return _mm256_or_si256(nib, _mm256_maskz_mov_epi8(ggml::load_u32(b + 4), _mm256_set1_epi8(16)));
}

template <uint32_t T>
void prep_32_min(const uint8_t* row, int64_t nblocks, MinPrep* P) {
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  for (int64_t t = 0; 2 * t < nblocks; ++t) {
    const uint8_t* b0 = row + bytes * (2 * t);
    const bool two = 2 * t + 1 < nblocks;
    const __m256i lo = block32_quants_min<T>(b0);
    const __m256i hi = two ? block32_quants_min<T>(b0 + bytes) : _mm256_setzero_si256();
    P[t].w = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    P[t].dw = scales2<T>(b0, b0 + bytes, two);
    P[t].mw = scales2<T>(b0 + 2, b0 + bytes + 2, two);
  }
}

template <int MR>
void rows_32_min(const MinPrep* P, int64_t nblocks, const QArgs& a, int64_t i0, int64_t j) {
  const int64_t k = a.k;
  const __m512i pair = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512 acc[MR], macc[MR];
  for (int r = 0; r < MR; ++r) acc[r] = macc[r] = _mm512_setzero_ps();
  for (int64_t t = 0; 2 * t < nblocks; ++t) {
    const MinPrep& p = P[t];
    const __mmask16 lanes = 2 * t + 1 < nblocks ? 0xffff : 0x00ff;
    for (int r = 0; r < MR; ++r) {
      const int64_t row = i0 + r;
      const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), p.w,
                                               _mm512_loadu_si512(a.x.q + row * k + 64 * t));
      const __m512i s4 = _mm512_loadu_si512(a.x.sum4 + row * (k / 4) + 16 * t);
      const __m512 dy = _mm512_permutexvar_ps(
          pair, _mm512_castps128_ps512(
                    _mm_castsi128_ps(load_two_floats(a.x.d + row * (k / 32) + 2 * t))));
      acc[r] =
          _mm512_mask3_fmadd_ps(_mm512_mul_ps(p.dw, dy), _mm512_cvtepi32_ps(isum), acc[r], lanes);
      macc[r] =
          _mm512_mask3_fmadd_ps(_mm512_mul_ps(p.mw, dy), _mm512_cvtepi32_ps(s4), macc[r], lanes);
    }
  }
  for (int r = 0; r < MR; ++r) a.y[(i0 + r) * a.ldy + j] = reduce16(acc[r]) + reduce16(macc[r]);
}

template <class Prep, class Rows>
void each_row_tile(const QArgs& a, int64_t j, const Prep* P, int64_t nb, Rows rows) {
  for_row_tiles<kRows>(a.m,
                       [&]<int MR>(int64_t i0) { rows.template operator()<MR>(P, nb, a, i0, j); });
}

// The rows of x as the 32-value kernels read them for m > 1, prepared once per task in its
// scratch: the quants + 128 (unsigned, as step_32's xor), each row padded to whole pairs of
// blocks, and per pair t the vector of d_y (block 2t in lanes 0..7, 2t + 1 in 8..15).
struct Rows32 {
  const uint8_t* q;
  const float* dy;
  int64_t pairs;  // per row: q's row stride is 64 * pairs bytes, dy's 16 * pairs floats
};

Rows32 prepare_rows_32(const QArgs& a, uint8_t* scratch) {
  const int64_t nb = a.k / 32, pairs = (nb + 1) / 2;
  float* dy = reinterpret_cast<float*>(scratch);
  uint8_t* q = scratch + 64 * a.m * pairs;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t i = 0; i < a.m; ++i) {
    const int8_t* src = a.x.q + i * a.k;
    const float* d = a.x.d + i * nb;
    for (int64_t t = 0; t < pairs; ++t) {  // the last pair of an odd row reads padding
      _mm512_storeu_si512(q + (i * pairs + t) * 64,
                          _mm512_xor_si512(_mm512_loadu_si512(src + 64 * t), flip));
      const float hi = 2 * t + 1 < nb ? d[2 * t + 1] : 0.0f;
      _mm512_store_ps(dy + (i * pairs + t) * 16,
                      _mm512_insertf32x8(_mm512_set1_ps(d[2 * t]), _mm256_set1_ps(hi), 1));
    }
  }
  return {q, dy, pairs};
}

// acc[r] += the pair's terms for rows i0 .. i0 + MR - 1: step_32's operations, lane for lane.
template <int MR>
[[gnu::always_inline]] inline void apply_32(const Q8Prep& p, const Rows32& x, int64_t i0, int64_t t,
                                            __mmask16 lanes, __m512* acc) {
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const int64_t at = (i0 + r) * x.pairs + t;
    const __m512i isum = _mm512_dpbusd_epi32(p.corr, _mm512_loadu_si512(x.q + 64 * at), p.w);
    const __m512 dd = _mm512_mul_ps(p.dw, _mm512_load_ps(x.dy + 16 * at));
    acc[r] = _mm512_mask3_fmadd_ps(dd, _mm512_cvtepi32_ps(isum), acc[r], lanes);
  }
}

// y[i0 .. i0 + MR - 1, j]: each pair of blocks decoded once into registers.
template <uint32_t T, int MR>
void rows_32(const QArgs& a, const Rows32& x, int64_t i0, int64_t j) {
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  const int64_t nb = a.k / 32;
  const uint8_t* w = a.w + j * a.ldw;
  __m512 acc[MR];
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t t = 0; t < nb / 2; ++t) {
    stream_ahead(w + 2 * bytes * t, 2 * bytes);
    apply_32<MR>(pair_32<T>(w, t, nb), x, i0, t, 0xffff, acc);
  }
  if (nb & 1) apply_32<MR>(pair_32<T>(w, nb / 2, nb), x, i0, nb / 2, 0x00ff, acc);
  store_reduced<MR>(acc, a.y + i0 * a.ldy + j, a.ldy);
}

template <uint32_t T>
void cols_32(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  const int64_t nb = a.k / 32;
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  if (a.m == 1) {  // one row of x: no reuse, each pair prepared in registers
    for (int64_t j = j0; j < j1; ++j) {
      const uint8_t* row = a.w + j * a.ldw;
      __m512 acc = _mm512_setzero_ps();
      for (int64_t t = 0; 2 * t < nb; ++t) {
        stream_ahead(row + 2 * bytes * t, 2 * bytes);
        acc = step_32(pair_32<T>(row, t, nb), t, nb, a, 0, acc);
      }
      a.y[j] = reduce16(acc);
    }
    return;
  }
  const Rows32 x = prepare_rows_32(a, scratch);
  for (int64_t j = j0; j < j1; ++j)
    for_each_tile(a.m, [&]<int MR>(int64_t i0) { rows_32<T, MR>(a, x, i0, j); });
}

template <uint32_t T>
void cols_32_min(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  MinPrep* P = reinterpret_cast<MinPrep*>(scratch);
  const int64_t nb = a.k / 32;
  for (int64_t j = j0; j < j1; ++j) {
    prefetch_row(a, j, j1);
    prep_32_min<T>(a.w + j * a.ldw, nb, P);
    each_row_tile(a, j, P, nb,
                  []<int MR>(const MinPrep* p, int64_t n, const QArgs& q, int64_t i0, int64_t jj) {
                    rows_32_min<MR>(p, n, q, i0, jj);
                  });
  }
}

// A decoded k-quant block (qint.hpp's k-quant lanes): four 64-byte vectors of unsigned quants
// w[0..3], the int16 scale vectors s[0] (for w[0], w[1]) and s[1] (w[2], w[3]), the 16 f32
// min terms wm and d_w. The integer sum of a row: dpbusd gives each int32 lane the sum of 4
// products (|sum| <= 4 * 63 * 127 < 2^15), packs joins the lanes of w[2c] and w[2c + 1] as
// int16 (exact), dpwssd multiplies each int16 by its sub-block's scale and adds pairs that
// share it. Output lane 4k + t of a pair (w[2c], w[2c + 1]) holds, for 128-bit lane k, int32
// lanes 4k + 2t, 4k + 2t + 1 of w[2c]'s sums (t < 2) or 4k + 2t - 4, 4k + 2t - 3 of w[2c + 1]'s.
struct KBlock {
  __m512i w[4];
  __m512i s[2];
  __m512 wm;
  __m512 dw;
};

// v, as a vector the compiler cannot see through: a splat d_w then meets d_y in one vmulps
// with a broadcast load, not a scalar multiply and a register broadcast per row.
[[gnu::always_inline]] inline __m512 opaque(__m512 v) {
  asm("" : "+v"(v));
  return v;
}

// int16 lane u of the scale vector of pair c: the index of its sub-block's scale.
// q5_K: w[2c] = low nibbles of the 64 bytes 64c.. (elements 128c + 0..31 and
// 128c + 64..95), w[2c + 1] the high nibbles (128c + 32..63 and 128c + 96..127).
__m512i scale_index_q5(int c) {
  alignas(64) int16_t idx[32];
  for (int u = 0; u < 32; ++u) idx[u] = static_cast<int16_t>(4 * c + 2 * (u >> 4) + ((u >> 2) & 1));
  return _mm512_load_si512(idx);
}
struct KIndex {
  __m512i s[2];
};

// q5_K: quants at byte 48, fifth bits at byte 16.
[[gnu::always_inline]] inline void decode_q5_k(const uint8_t* blk, const KIndex& ix, KBlock& p) {
  const __m128i pick_x = _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11);
  const __m128i pick_y = _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7);
  const __m128i keep_low =
      _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
  const __m128i keep_hi = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15);
  const __m128i keep_top = _mm_setr_epi8(0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0, 0, 48, 48, 48, 48);
  // Scales and mins (ggml::k_scales_mins), 12 bytes at 4: bytes 0..7 sc, 8..15 m.
  const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 4));
  const __m128i x = _mm_shuffle_epi8(sm, pick_x), t = _mm_shuffle_epi8(sm, pick_y);
  const __m128i scm = _mm_or_si128(
      _mm_or_si128(_mm_and_si128(x, keep_low), _mm_and_si128(_mm_srli_epi16(x, 4), keep_hi)),
      _mm_and_si128(_mm_srli_epi16(t, 2), keep_top));
  const __m512i sc16 = _mm512_cvtepu8_epi16(_mm256_zextsi128_si256(scm));
  p.s[0] = _mm512_permutexvar_epi16(ix.s[0], sc16);
  p.s[1] = _mm512_permutexvar_epi16(ix.s[1], sc16);
  const __m512 mins = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(scm, scm)));
  p.wm = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(ggml::load_u16(blk + 2))), mins);
  p.dw = opaque(_mm512_set1_ps(_cvtsh_ss(ggml::load_u16(blk))));
  const __m512i low4 = _mm512_set1_epi8(15);
  const __m512i qh =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16)));
  for (int c = 0; c < 2; ++c) {
    const __m512i q = _mm512_loadu_si512(blk + 48 + 64 * c);
    p.w[2 * c] = _mm512_and_si512(q, low4);
    p.w[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
    // fifth bits: bit 4c (4c + 2) of qh byte l for w[2c] bytes l (32 + l)
    for (int h = 0; h < 2; ++h) {
      const __m512i cnt =
          _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(4 * c + h)),
                             _mm256_set1_epi16(static_cast<short>(4 * c + 2 + h)), 1);
      const __m512i bit = _mm512_and_si512(_mm512_srlv_epi16(qh, cnt), _mm512_set1_epi8(1));
      p.w[2 * c + h] = _mm512_or_si512(p.w[2 * c + h], _mm512_slli_epi16(bit, 4));
    }
  }
}

// The rows of x as a k-quant kernel reads them, prepared once per task in its scratch: the
// quants (reordered so that byte u of a 64-byte load matches w[g]'s byte u)
// and ys (qint.hpp: d_y * bsum16 per 16 values).
struct KRows {
  const int8_t* q;
  const float* ys;
};

KRows prepare_rows(const QArgs& a, uint8_t* scratch) {
  const int64_t m = a.m, k = a.k;
  float* ys = reinterpret_cast<float*>(scratch);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t b = 0; b < k / 256; ++b) {
      const __m512 bs = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(a.x.bsum16 + i * (k / 16) + 16 * b))));
      _mm512_store_ps(ys + i * (k / 16) + 16 * b,
                      _mm512_mul_ps(_mm512_set1_ps(a.x.d[i * (k / 256) + b]), bs));
    }
  int8_t* yr = reinterpret_cast<int8_t*>(scratch) + 4 * m * (k / 16);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < k / 128; ++c) {
      const int8_t* y = a.x.q + i * k + 128 * c;
      int8_t* o = yr + i * k + 128 * c;
      __builtin_memcpy(o, y, 32);
      __builtin_memcpy(o + 32, y + 64, 32);
      __builtin_memcpy(o + 64, y + 32, 32);
      __builtin_memcpy(o + 96, y + 96, 32);
    }
  return {yr, ys};
}

// The bits of 1.5 * 2^23 in each int32 lane, loaded afresh (a broadcast load, no execution
// port) for each accumulating instruction. A sum v with |v| < 2^22 added to it reads, as a
// float, 1.5 * 2^23 + v exactly, so subtracting 1.5 * 2^23 gives float(v) exactly.
constexpr int32_t kMagicBits = 0x4B400000;
constexpr float kMagic = 12582912.0f;
[[gnu::always_inline]] inline __m512i fresh_magic() {
  static const int32_t bits = kMagicBits;
  __m512i z;
  asm volatile("vpbroadcastd %1, %0" : "=v"(z) : "m"(bits));
  return z;
}

// acc[r] += block b's terms for rows i0 .. i0 + MR - 1. Small: every lane of isum is below
// 2^22 in magnitude (q5_K: 16 values of at most 63 * 31 * 127), so float(isum) comes
// from the magic number with a subtraction (either port) instead of vcvtdq2ps (port 0 only,
// which the multiplies already fill); the same value either way.
template <int MR, bool Small>
[[gnu::always_inline]] inline void apply_k(const KBlock& p, const QArgs& a, const KRows& x,
                                           int64_t i0, int64_t b, __m512* acc) {
  const int64_t k = a.k;
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const int64_t row = i0 + r;
    const int8_t* y = x.q + row * k + 256 * b;
    const __m512i s0 = _mm512_dpbusd_epi32(fresh_zero(), p.w[0], _mm512_loadu_si512(y));
    const __m512i s1 = _mm512_dpbusd_epi32(fresh_zero(), p.w[1], _mm512_loadu_si512(y + 64));
    const __m512i s2 = _mm512_dpbusd_epi32(fresh_zero(), p.w[2], _mm512_loadu_si512(y + 128));
    const __m512i s3 = _mm512_dpbusd_epi32(fresh_zero(), p.w[3], _mm512_loadu_si512(y + 192));
    const __m512i sum =
        _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(Small ? fresh_magic() : fresh_zero(),
                                                _mm512_packs_epi32(s0, s1), p.s[0]),
                            _mm512_packs_epi32(s2, s3), p.s[1]);
    const __m512 fsum = Small ? _mm512_sub_ps(_mm512_castsi512_ps(sum), _mm512_set1_ps(kMagic))
                              : _mm512_cvtepi32_ps(sum);
    const __m512 dd = _mm512_mul_ps(p.dw, _mm512_set1_ps(a.x.d[row * (k / 256) + b]));
    acc[r] = _mm512_fmadd_ps(dd, fsum, acc[r]);
    acc[r] = _mm512_fnmadd_ps(p.wm, _mm512_load_ps(x.ys + row * (k / 16) + 16 * b), acc[r]);
  }
}

// y[i0 .. i0 + MR - 1, j]: each block (Bytes long) decoded once into registers and applied to
// MR rows.
template <int MR, bool Small, int64_t Bytes, class Decode>
void k_rows(const QArgs& a, const KRows& x, const KIndex& ix, int64_t i0, int64_t j,
            Decode decode) {
  const int64_t nb = a.k / 256;
  const uint8_t* w = a.w + j * a.ldw;
  __m512 acc[MR];
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + Bytes * b;
    stream_ahead(blk, Bytes);
    KBlock p;
    decode(blk, ix, p);
    apply_k<MR, Small>(p, a, x, i0, b, acc);
  }
  if constexpr (MR > 8) {  // two trees of 8 rows
    store_reduced<8>(acc, a.y + i0 * a.ldy + j, a.ldy);
    store_reduced<MR - 8>(acc + 8, a.y + (i0 + 8) * a.ldy + j, a.ldy);
  } else {
    store_reduced<MR>(acc, a.y + i0 * a.ldy + j, a.ldy);
  }
}

// Calls f.template operator()<MR>(i0) for row tiles of up to 16 rows: 16 while at least 9
// rows are left, then 9..16 rows as one tile or 1..8 as for_each_tile would.
template <class F>
void tiles_of_16(int64_t m, F f) {
  int64_t i0 = 0;
  for (; m - i0 >= 9; i0 += 16) {
    switch (m - i0 < 16 ? m - i0 : 16) {
      case 9:
        f.template operator()<9>(i0);
        break;
      case 10:
        f.template operator()<10>(i0);
        break;
      case 11:
        f.template operator()<11>(i0);
        break;
      case 12:
        f.template operator()<12>(i0);
        break;
      case 13:
        f.template operator()<13>(i0);
        break;
      case 14:
        f.template operator()<14>(i0);
        break;
      case 15:
        f.template operator()<15>(i0);
        break;
      default:
        f.template operator()<16>(i0);
        break;
    }
  }
  if (i0 < m) for_each_tile(m - i0, [&]<int MR>(int64_t i) { f.template operator()<MR>(i0 + i); });
}

// Tiles of up to 16 rows: the decoded block (8 vectors, the two f32 ones read from memory
// by the compiler as it needs) and 16 accumulators; each block is decoded once per 16 rows.
// q5_K: rows reordered to the stored quant order, small sums.
template <int64_t Bytes, class Decode>
void cols_k(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch, const KIndex& ix,
            Decode decode) {
  const KRows x = prepare_rows(a, scratch);
  for (int64_t j = j0; j < j1; ++j)
    tiles_of_16(a.m, [&]<int MR>(int64_t i0) { k_rows<MR, true, Bytes>(a, x, ix, i0, j, decode); });
}

void cols_q5_k(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  const KIndex ix{{scale_index_q5(0), scale_index_q5(1)}};
  cols_k<176>(a, j0, j1, scratch, ix,
              [](const uint8_t* blk, const KIndex& i, KBlock& p) { decode_q5_k(blk, i, p); });
}

// 64 rounded activations (four vectors of int32, in order) as bytes clamped to [-127, 127],
// kept in a register: the packs saturate to [-128, 127], then -128 becomes -127. (Storing
// them 16 at a time and loading the 64 back for the sums stalled on store forwarding.)
inline __m512i bytes_of_64(__m512i a, __m512i b, __m512i c, __m512i d) {
  const __m512i packed = _mm512_packs_epi16(_mm512_packs_epi32(a, b), _mm512_packs_epi32(c, d));
  // 128-bit lane l holds 4 values of each input: input j's values 4l..4l+3 in dword 4l + j
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_max_epi8(_mm512_permutexvar_epi32(order, packed), _mm512_set1_epi8(-127));
}

}  // namespace

// The blocks of the rows (in row order, across rows) go kChunk at a time through three passes:
// every block's largest magnitude, then every block's scale (a scan for the first maximum and
// two divisions), then the quantization. One block's steps depend on each other, and done
// block by block they left the core waiting on them; in passes, the blocks of a chunk overlap.
// Each block's operations and their order are unchanged, so are its bits.
void quantize_rows_avx512(const float* x, int64_t ldx, int64_t m, int64_t k, bool kb, int8_t* q,
                          float* d, int16_t* bsum16, int32_t* sum4) {
  constexpr int64_t kChunk = 8;
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const int64_t B = kb ? 256 : 32, nb = k / B, blocks = m * nb;
  const __m512i ones = _mm512_set1_epi8(1);
  for (int64_t f0 = 0; f0 < blocks; f0 += kChunk) {
    const int64_t chunk = blocks - f0 < kChunk ? blocks - f0 : kChunk;
    const float* src[kChunk];  // block f's values: block f % nb of row f / nb
    float amax[kChunk], scale[kChunk], dd[kChunk];
    for (int64_t c = 0; c < chunk; ++c) {
      const int64_t f = f0 + c;
      const float* xb = src[c] = x + f / nb * ldx + B * (f % nb);
      __m512 vmax = _mm512_setzero_ps();
      for (int64_t e = 0; e < B; e += 16)
        vmax = _mm512_max_ps(vmax, _mm512_andnot_ps(sign, _mm512_loadu_ps(xb + e)));
      amax[c] = _mm512_reduce_max_ps(vmax);
    }
    for (int64_t c = 0; c < chunk; ++c) {  // q = rint(x * scale)
      scale[c] = 0;
      dd[c] = 0;
      if (kb) {
        if (amax[c] != 0) {
          const float* xb = src[c];
          float max = 0;  // the first value of the largest magnitude
          const __m512 va = _mm512_set1_ps(amax[c]);
          for (int64_t e = 0; e < B; e += 16) {
            const __mmask16 at =
                _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, _mm512_loadu_ps(xb + e)), va, _CMP_EQ_OQ);
            if (at) {
              max = xb[e + __builtin_ctz(at)];
              break;
            }
          }
          scale[c] = -127.0f / max;
          dd[c] = 1.0f / scale[c];
        }
      } else {
        dd[c] = amax[c] / 127.0f;
        scale[c] = dd[c] != 0 ? 1.0f / dd[c] : 0.0f;
      }
    }
    for (int64_t c = 0; c < chunk; ++c) {
      const int64_t f = f0 + c;  // its quants at B f of q
      const float* xb = src[c];
      int8_t* qb = q + B * f;
      const __m512 vs = _mm512_set1_ps(scale[c]);
      auto rounded = [&](int64_t e) {
        return _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + e), vs));
      };
      if (kb) {  // the sums of 4 (vpdpbusd with ones), then of 16 by two rounds of pairs
        __m512i s4[4], s8[2];
        for (int t = 0; t < 4; ++t) {
          const int64_t e = 64 * t;
          const __m512i q64 =
              bytes_of_64(rounded(e), rounded(e + 16), rounded(e + 32), rounded(e + 48));
          _mm512_storeu_si512(qb + e, q64);
          s4[t] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, q64);
        }
        const __m512i even =
            _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
        for (int t = 0; t < 2; ++t)
          s8[t] = _mm512_add_epi32(_mm512_permutex2var_epi32(s4[2 * t], even, s4[2 * t + 1]),
                                   _mm512_permutex2var_epi32(s4[2 * t], odd, s4[2 * t + 1]));
        const __m512i s16 = _mm512_add_epi32(_mm512_permutex2var_epi32(s8[0], even, s8[1]),
                                             _mm512_permutex2var_epi32(s8[0], odd, s8[1]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(bsum16 + 16 * f),
                            _mm512_cvtepi32_epi16(s16));
      } else {
        const __m256i q32 = _mm512_castsi512_si256(
            bytes_of_64(rounded(0), rounded(16), _mm512_setzero_si512(), _mm512_setzero_si512()));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qb), q32);
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(sum4 + 8 * f),
            _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm512_castsi512_si256(ones), q32));
      }
      d[f] = dd[c];
    }
  }
}

void cols_avx512(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  switch (a.dtype) {
    case SPECD_DTYPE_Q4_K:
      return cols_q4k_avx512(a, j0, j1, scratch);
    case SPECD_DTYPE_Q5_K:
      return cols_q5_k(a, j0, j1, scratch);
    case SPECD_DTYPE_Q6_K:
      return cols_q6k_avx512(a, j0, j1, scratch);
    case SPECD_DTYPE_Q8_0:
      return cols_q8_0_avx512(a, j0, j1, scratch);
    case SPECD_DTYPE_Q2_K:
    case SPECD_DTYPE_Q3_K:
    case SPECD_DTYPE_IQ4_XS:
      return cols_lowbit_avx512(a, j0, j1, scratch);
    case SPECD_DTYPE_Q4_1:
    case SPECD_DTYPE_Q5_1:
      return with_dtype<ggml::kQ4_1, ggml::kQ5_1>(
          a.dtype, "cols_avx512", [&]<uint32_t T>() { cols_32_min<T>(a, j0, j1, scratch); });
    default:  // one scale per block of 32
      return with_dtype<ggml::kQ4_0, ggml::kQ5_0, ggml::kIQ4_NL, ggml::kMXFP4>(
          a.dtype, "cols_avx512", [&]<uint32_t T>() { cols_32<T>(a, j0, j1, scratch); });
  }
}

}  // namespace specd::cpu::qint
