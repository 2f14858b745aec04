// The integer family on AVX2 + FMA (called only after avx2_available()): qint.hpp's lanes in
// two 8-lane halves (lanes 0..7 and 8..15), pmaddubsw + pmaddwd for the integer sums (q5_K
// mirrors the AVX-512 kernel's vectors in 256-bit halves, packssdw included; q4_K, q6_K and q8_0
// have no lanes: one integer per block and row, 8 (q4_K) or 4 rows per tile). Weight rows are
// prepared into the task's scratch once and applied to all m rows (q4_K and q6_K up to 4 rows:
// block by block, just before use; q4_K's one row four columns at a time); the bits equal the
// generic kernel's.
#include <immintrin.h>

#include <algorithm>

#include "qint/qint.hpp"
#include "qint/qint_lowbit.hpp"
#include "qint/qint_prefetch.hpp"
#include "qint/qint_reduce.hpp"
#include "qint/qint_scale.hpp"
#include "qint/qint_tiles.hpp"
#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu::qint {
namespace {

constexpr int kRows = 2;  // rows of x per register tile

// A prepared 256-value k-quant block in qint.hpp's k-quant lanes, laid out as the AVX-512
// kernel's vectors split in 256-bit halves: w[g][h] half h of quant vector g, s[c][h] the
// int16 scales of pair c, wm[h] the min terms of groups 8h .. 8h + 7.
struct alignas(32) KPrep {
  __m256i w[4][2];
  __m256i s[2][2];
  __m256 wm[2];
  float d;
};

// A binary16 field to f32, exactly (F16C).
float f16(const uint8_t* p) {
  return _cvtsh_ss(ggml::load_u16(p));
}

// A q4_K/q5_K block's 8 scales (bytes 0..7) and 8 mins (bytes 8..15) in a register, from
// ggml::k_scales_mins_words: unpacked byte by byte and loaded back as vectors, they stalled on
// store forwarding (one row of q4_K took 1.2x as long, of q5_K 1.3x).
inline __m128i scales_mins(const uint8_t* blk) {
  uint32_t w[4];
  ggml::k_scales_mins_words(blk + 4, w);
  return _mm_setr_epi32(static_cast<int>(w[0]), static_cast<int>(w[1]), static_cast<int>(w[2]),
                        static_cast<int>(w[3]));
}

// The 8 mins of scales_mins as int16.
inline __m128i mins16(__m128i sm) {
  return _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
}

// q5_K (nibbles at byte 48, fifth bits at byte 16). Vector 2c is the low nibbles of the 64
// quant bytes 64c.., 2c + 1 their high nibbles. The scale and min vectors are spread in
// registers.
void prep_q5_k(const uint8_t* blk, KPrep* p) {
  p->d = f16(blk);
  const float dmin = f16(blk + 2);
  const __m128i sm = scales_mins(blk);
  // s[c][h] int16 lane u: the scale of sub-block 4c + 2h + ((u >> 2) & 1), from the scales as
  // int16 in both 128-bit halves.
  const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 2; ++h) {
      const char a = static_cast<char>(2 * (4 * c + 2 * h)), b = static_cast<char>(a + 2);
      const __m256i pick = _mm256_setr_epi8(a, a + 1, a, a + 1, a, a + 1, a, a + 1,  //
                                            b, b + 1, b, b + 1, b, b + 1, b, b + 1,  //
                                            a, a + 1, a, a + 1, a, a + 1, a, a + 1,  //
                                            b, b + 1, b, b + 1, b, b + 1, b, b + 1);
      p->s[c][h] = _mm256_shuffle_epi8(sc16, pick);
    }
  // wm lane g: dmin * mins[g / 2].
  const __m128i mn = mins16(sm);
  const __m256 vdmin = _mm256_set1_ps(dmin);
  p->wm[0] =
      _mm256_mul_ps(vdmin, _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm_unpacklo_epi16(mn, mn))));
  p->wm[1] =
      _mm256_mul_ps(vdmin, _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm_unpackhi_epi16(mn, mn))));
  const __m256i low4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16));
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 2; ++h) {
      const __m256i q =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 48 + 64 * c + 32 * h));
      p->w[2 * c][h] = _mm256_and_si256(q, low4);
      p->w[2 * c + 1][h] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      for (int u = 0; u < 2; ++u) {  // bit 4c + 2h (+ 1 for the high nibbles) of qh byte l
        const __m256i bit =
            _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(4 * c + 2 * h + u)), one);
        p->w[2 * c + u][h] = _mm256_or_si256(p->w[2 * c + u][h], _mm256_slli_epi16(bit, 4));
      }
    }
}

// The int32 sums of 4 products u8 w * s8 y (|sum| <= 4 * 31 * 127: no saturation).
inline __m256i sum4(__m256i w, const int8_t* y) {
  const __m256i p =
      _mm256_maddubs_epi16(w, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y)));
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

// The activation offset of half h of vector g in q5_K's stored order.
int64_t y_offset(int g, int h) {
  return 128 * (g >> 1) + 64 * h + 32 * (g & 1);
}

template <int MR>
void rows_k(const KPrep* P, int64_t nb, const QArgs& a, int64_t i0, int64_t j) {
  const int64_t k = a.k;
  __m256 acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const KPrep& p = P[b];
    const __m256 dw = _mm256_set1_ps(p.d);
    for (int r = 0; r < MR; ++r) {
      const int64_t row = i0 + r;
      const int8_t* y = a.x.q + row * k + 256 * b;
      const float dy = a.x.d[row * (k / 256) + b];
      const __m256 dd = _mm256_mul_ps(dw, _mm256_set1_ps(dy));
      const __m256i bs = _mm256_cvtepi16_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.x.bsum16 + row * (k / 16) + 16 * b)));
      const __m256i bs_hi = _mm256_cvtepi16_epi32(_mm_loadu_si128(
          reinterpret_cast<const __m128i*>(a.x.bsum16 + row * (k / 16) + 16 * b + 8)));
      for (int h = 0; h < 2; ++h) {
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 2; ++c) {
          const __m256i packed =
              _mm256_packs_epi32(sum4(p.w[2 * c][h], y + y_offset(2 * c, h)),
                                 sum4(p.w[2 * c + 1][h], y + y_offset(2 * c + 1, h)));
          isum = _mm256_add_epi32(isum, _mm256_madd_epi16(packed, p.s[c][h]));
        }
        const __m256 ys = _mm256_mul_ps(_mm256_set1_ps(dy), _mm256_cvtepi32_ps(h ? bs_hi : bs));
        acc[r][h] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(isum), acc[r][h]);
        acc[r][h] = _mm256_fnmadd_ps(p.wm[h], ys, acc[r][h]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) a.y[(i0 + r) * a.ldy + j] = reduce16(acc[r][0], acc[r][1]);
}

// A prepared q4_K block (qint.hpp's q4_K: no lanes): q[s] the 32 quants of sub-block s in
// element order, sc[s] its scale, mins the int16 vector with lanes 2g and 2g + 1 = mn[g].
struct alignas(32) Q4KPrep {
  __m256i q[8];
  __m256i mins;
  alignas(16) int16_t sc[8];
  float d, dmin;
};

[[gnu::always_inline]] inline void prep_q4_k(const uint8_t* blk, Q4KPrep* p) {
  p->d = f16(blk);
  p->dmin = f16(blk + 2);
  const __m128i sm = scales_mins(blk);
  _mm_store_si128(reinterpret_cast<__m128i*>(p->sc), _mm_cvtepu8_epi16(sm));
  const __m128i mn = mins16(sm);  // lanes 2g and 2g + 1: min g
  p->mins = _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn));
  const __m256i low4 = _mm256_set1_epi8(15);
  for (int c = 0; c < 4; ++c) {  // bytes 16 + 32c: elements 64c + l (low), 64c + 32 + l (high)
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * c));
    p->q[2 * c] = _mm256_and_si256(q, low4);
    p->q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
  }
}

// d_y of block b (of `values` values) of rows i0 .. i0 + MR - 1 in lanes 0 .. MR - 1 (0 in the
// others), built in registers: scalar stores loaded back as a vector stalled on store forwarding.
template <int MR>
[[gnu::always_inline]] inline __m128 row_scales(const QArgs& a, int64_t i0, int64_t b,
                                                int64_t values = 256) {
  float v[4];
  for (int r = 0; r < 4; ++r) v[r] = r < MR ? a.x.d[(i0 + r) * (a.k / values) + b] : 0.0f;
  return _mm_setr_ps(v[0], v[1], v[2], v[3]);
}

// Lane r = the sum of v[r]'s 8 int32 lanes (exact: integer adds in any order).
inline __m128i sums_of_4(const __m256i* v) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// Rows i0 .. i0 + MR - 1 (MR <= 8) of column j: per block, each row's isum and msum as 8
// int32 lanes (maddubs pairs <= 2 * 15 * 127, times the scale in pmaddwd), reduced to one
// integer each, then the two f32 steps with the rows in the lanes of one vector per 4 rows.
template <int MR, class Block>
void rows_q4_k(int64_t nb, const QArgs& a, int64_t i0, int64_t j, Block block) {
  constexpr int H = (MR + 3) / 4;  // 4-row halves of the tile (MR <= 8)
  const int64_t k = a.k;
  __m128 acc[H];
  for (int h = 0; h < H; ++h) acc[h] = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const Q4KPrep& p = block(b);
    const int8_t* y[MR];
    __m256i isum[4 * H], msum[4 * H];
    for (int r = 0; r < 4 * H; ++r) isum[r] = msum[r] = _mm256_setzero_si256();
    for (int r = 0; r < MR; ++r) y[r] = a.x.q + (i0 + r) * k + 256 * b;
    for (int s = 0; s < 8; ++s) {
      const __m256i sc = _mm256_set1_epi16(p.sc[s]);
      for (int r = 0; r < MR; ++r) {
        const __m256i ys = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[r] + 32 * s));
        isum[r] =
            _mm256_add_epi32(isum[r], _mm256_madd_epi16(_mm256_maddubs_epi16(p.q[s], ys), sc));
      }
    }
    for (int r = 0; r < MR; ++r)
      msum[r] = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                      a.x.bsum16 + (i0 + r) * (k / 16) + 16 * b)),
                                  p.mins);
    for (int h = 0; h < H; ++h) {
      __m128 d = row_scales<(MR < 4 ? MR : 4)>(a, i0, b);
      if constexpr (MR > 4)
        if (h == 1) d = row_scales<MR - 4>(a, i0 + 4, b);
      const __m128 dd = _mm_mul_ps(_mm_set1_ps(p.d), d), dm = _mm_mul_ps(_mm_set1_ps(p.dmin), d);
      acc[h] = _mm_fmadd_ps(dd, _mm_cvtepi32_ps(sums_of_4(isum + 4 * h)), acc[h]);
      acc[h] = _mm_fnmadd_ps(dm, _mm_cvtepi32_ps(sums_of_4(msum + 4 * h)), acc[h]);  // fma(-dm, ..)
    }
  }
  alignas(16) float out[4 * H];
  for (int h = 0; h < H; ++h) _mm_store_ps(out + 4 * h, acc[h]);
  for (int r = 0; r < MR; ++r) a.y[(i0 + r) * a.ldy + j] = out[r];
}

// A prepared q6_K block (qint.hpp's q6_K: no lanes): q[s] the 32 quants q_e + 32 (0..63) of
// elements 32s .. 32s + 31 in order, s[s] the int16 scales of their pmaddwd pairs (lanes 0..7
// sc[2s], 8..15 sc[2s + 1]), sc the 16 int16 scales (for the bsum16 term).
struct alignas(32) Q6KPrep {
  __m256i q[8];
  __m256i s[8];
  __m256i sc;
  float d;
};

[[gnu::always_inline]] inline void prep_q6_k(const uint8_t* blk, Q6KPrep* p) {
  p->d = f16(blk + 208);
  const __m128i sc16 =
      _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 192)));
  const __m128i sc16_hi =
      _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 200)));
  p->sc = _mm256_set_m128i(sc16_hi, sc16);
  // s[s]: bytes 4s, 4s + 1 (int16 lane 2s) of the scales in the low half, 4s + 2, 4s + 3 in
  // the high half, from both halves holding int16 scales 0..7 (s < 4) or 8..15 (s >= 4).
  const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                        2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  const __m256i lo = _mm256_broadcastsi128_si256(sc16), hi = _mm256_broadcastsi128_si256(sc16_hi);
  for (int s = 0; s < 8; ++s)
    p->s[s] = _mm256_shuffle_epi8(
        s < 4 ? lo : hi, _mm256_add_epi8(pick, _mm256_set1_epi8(static_cast<char>(4 * (s & 3)))));
  const __m256i low4 = _mm256_set1_epi8(15), low2 = _mm256_set1_epi8(3);
  for (int c = 0; c < 2; ++c) {  // elements 128c + 64u + 32h + l (l < 32)
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * c));
    for (int h = 0; h < 2; ++h) {
      const __m256i ql =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * c + 32 * h));
      for (int u = 0; u < 2; ++u) {  // low nibble u of ql, bits 4u + 2h of qh
        const __m256i lo4 = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(4 * u)), low4);
        const __m256i hi2 =
            _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(4 * u + 2 * h)), low2);
        p->q[4 * c + 2 * u + h] = _mm256_or_si256(lo4, _mm256_slli_epi16(hi2, 4));
      }
    }
  }
}

// Rows i0 .. i0 + MR - 1 (MR <= 4), block b: each row's sum of sc * (q + 32) * y as 8 int32
// lanes (maddubs pairs <= 2 * 63 * 127, times the scale in pmaddwd), minus 32 times its sum of
// sc[g] * bsum16[g], reduced to one integer (isum, exact: int32 adds in any order), then the
// f32 step with the rows in the lanes of acc.
template <int MR>
[[gnu::always_inline]] inline void apply_q6_k(const Q6KPrep& p, const QArgs& a, int64_t i0,
                                              int64_t b, __m128& acc) {
  const int64_t k = a.k;
  const int8_t* y[MR];
  __m256i isum[4];
  for (int r = 0; r < 4; ++r) isum[r] = _mm256_setzero_si256();
  for (int r = 0; r < MR; ++r) y[r] = a.x.q + (i0 + r) * k + 256 * b;
  for (int s = 0; s < 8; ++s)
    for (int r = 0; r < MR; ++r) {
      const __m256i ys = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[r] + 32 * s));
      isum[r] =
          _mm256_add_epi32(isum[r], _mm256_madd_epi16(_mm256_maddubs_epi16(p.q[s], ys), p.s[s]));
    }
  for (int r = 0; r < MR; ++r) {
    const __m256i off = _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                              a.x.bsum16 + (i0 + r) * (k / 16) + 16 * b)),
                                          p.sc);
    isum[r] = _mm256_sub_epi32(isum[r], _mm256_slli_epi32(off, 5));
  }
  const __m128 dd = _mm_mul_ps(_mm_set1_ps(p.d), row_scales<MR>(a, i0, b));
  acc = _mm_fmadd_ps(dd, _mm_cvtepi32_ps(sums_of_4(isum)), acc);
}

// y[i0 .. i0 + MR - 1, j] from the column's blocks, each got by block(b) (a Q6KPrep).
template <int MR, class Block>
void rows_q6_k(int64_t nb, const QArgs& a, int64_t i0, int64_t j, Block block) {
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) apply_q6_k<MR>(block(b), a, i0, b, acc);
  alignas(16) float out[4];
  _mm_store_ps(out, acc);
  for (int r = 0; r < MR; ++r) a.y[(i0 + r) * a.ldy + j] = out[r];
}

// A prepared block of 32 integers (q8_0, q4_0, ..): |w| (unsigned) and w (for the sign), and the
// scale.
struct alignas(32) Q8Prep {
  __m256i abs_w;
  __m256i w;
  float d;
  float pad[7];
};

// Byte i = 0xff where bit i of x is set, else 0.
__m256i bytes_from_bits(uint32_t x) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(x)),
      _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);  // all bits but bit i % 8
  return _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi64x(-1));
}

// The 32 integers of a block without a min (ggml::block32_int), as int8.
template <uint32_t T>
__m256i block32_ints(const uint8_t* b) {
  if constexpr (T == ggml::kQ8_0) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
  } else {
    constexpr int qs_at = T == ggml::kQ5_0 ? 6 : T == ggml::kMXFP4 ? 1 : 2;
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + qs_at));
    const __m128i low4 = _mm_set1_epi8(15);
    const __m256i nib = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low4),
                                         _mm_and_si128(q, low4));  // element order
    if constexpr (T == ggml::kQ4_0) {
      return _mm256_sub_epi8(nib, _mm256_set1_epi8(8));
    } else if constexpr (T == ggml::kQ5_0) {
      const __m256i five =
          _mm256_and_si256(bytes_from_bits(ggml::load_u32(b + 2)), _mm256_set1_epi8(16));
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
}

template <uint32_t T>
void prep_32(const uint8_t* row, int64_t nb, Q8Prep* P, const uint8_t* ahead) {
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  for (int64_t b = 0; b < nb; ++b) {
    if (ahead) prefetch_span(ahead + bytes * b, bytes);
    const __m256i w = block32_ints<T>(row + bytes * b);
    P[b].w = w;
    P[b].abs_w = _mm256_sign_epi8(w, w);  // -128 stays 0x80 = 128 unsigned
    P[b].d = scale_32<T>(row + bytes * b);
  }
}

// The 8 int32 lanes of 32 products w * y, 4 each (|w| * (y with w's sign) = w * y;
// |w| * |y| <= 128 * 127 keeps maddubs's pairs in int16).
[[gnu::always_inline]] inline __m256i products_32(__m256i abs_w, __m256i w, __m256i y) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(y, w)),
                           _mm256_set1_epi16(1));
}

// The same for a prepared block and the 32 activation quants at y.
[[gnu::always_inline]] inline __m256i products_32(const Q8Prep& p, const int8_t* y) {
  return products_32(p.abs_w, p.w, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y)));
}

// Lanes of the 32-value types (qint.hpp): per block, 8 lanes of 4 products each.
template <int MR>
void rows_32_lanes(const Q8Prep* P, int64_t nb, const QArgs& a, int64_t i0, int64_t j) {
  const int64_t k = a.k;
  __m256 acc[MR][2];
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const Q8Prep& p = P[b];
    const __m256 dw = _mm256_set1_ps(p.d);
    for (int r = 0; r < MR; ++r) {
      const int64_t row = i0 + r;
      const __m256i isum = products_32(p, a.x.q + row * k + 32 * b);
      const __m256 dd = _mm256_mul_ps(dw, _mm256_set1_ps(a.x.d[row * (k / 32) + b]));
      acc[r][b & 1] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(isum), acc[r][b & 1]);
    }
  }
  for (int r = 0; r < MR; ++r) a.y[(i0 + r) * a.ldy + j] = reduce16(acc[r][0], acc[r][1]);
}

// q8_0 (qint.hpp: one integer per block, no lanes) for rows i0 .. i0 + MR - 1 (MR <= 4): each
// row's 8 lanes reduced to its block integer, the rows in the lanes of one vector.
template <int MR>
void rows_q8_0(const Q8Prep* P, int64_t nb, const QArgs& a, int64_t i0, int64_t j) {
  const int64_t k = a.k;
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const Q8Prep& p = P[b];
    __m256i isum[4];
    for (int r = 0; r < 4; ++r)
      isum[r] = r < MR ? products_32(p, a.x.q + (i0 + r) * k + 32 * b) : _mm256_setzero_si256();
    const __m128 dd = _mm_mul_ps(_mm_set1_ps(p.d), row_scales<MR>(a, i0, b, 32));
    acc = _mm_fmadd_ps(dd, _mm_cvtepi32_ps(sums_of_4(isum)), acc);
  }
  alignas(16) float out[4];
  _mm_store_ps(out, acc);
  for (int r = 0; r < MR; ++r) a.y[(i0 + r) * a.ldy + j] = out[r];
}

// A prepared q4_1 / q5_1 block: the unsigned quants and the scales d and m.
struct alignas(32) MinPrep {
  __m256i w;
  float d, m;
  float pad[6];
};

template <uint32_t T>
void prep_32_min(const uint8_t* row, int64_t nb, MinPrep* P, const uint8_t* ahead) {
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  constexpr int qs_at = T == ggml::kQ5_1 ? 8 : 4;
  const __m128i low4 = _mm_set1_epi8(15);
  for (int64_t b = 0; b < nb; ++b) {
    if (ahead) prefetch_span(ahead + bytes * b, bytes);
    const uint8_t* blk = row + bytes * b;
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + qs_at));
    __m256i w = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low4), _mm_and_si128(q, low4));
    if constexpr (T == ggml::kQ5_1)
      w = _mm256_or_si256(
          w, _mm256_and_si256(bytes_from_bits(ggml::load_u32(blk + 4)), _mm256_set1_epi8(16)));
    P[b].w = w;
    P[b].d = f16(blk);
    P[b].m = f16(blk + 2);
  }
}

template <int MR>
void rows_32_min(const MinPrep* P, int64_t nb, const QArgs& a, int64_t i0, int64_t j) {
  const int64_t k = a.k;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[MR][2], macc[MR][2];
  for (int r = 0; r < MR; ++r)
    acc[r][0] = acc[r][1] = macc[r][0] = macc[r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const MinPrep& p = P[b];
    const __m256 dw = _mm256_set1_ps(p.d), mw = _mm256_set1_ps(p.m);
    for (int r = 0; r < MR; ++r) {
      const int64_t row = i0 + r;
      const __m256i y =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x.q + row * k + 32 * b));
      const __m256i isum = _mm256_madd_epi16(_mm256_maddubs_epi16(p.w, y), ones);
      const __m256i s4 =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x.sum4 + row * (k / 4) + 8 * b));
      const __m256 dy = _mm256_set1_ps(a.x.d[row * (k / 32) + b]);
      acc[r][b & 1] =
          _mm256_fmadd_ps(_mm256_mul_ps(dw, dy), _mm256_cvtepi32_ps(isum), acc[r][b & 1]);
      macc[r][b & 1] =
          _mm256_fmadd_ps(_mm256_mul_ps(mw, dy), _mm256_cvtepi32_ps(s4), macc[r][b & 1]);
    }
  }
  for (int r = 0; r < MR; ++r)
    a.y[(i0 + r) * a.ldy + j] = reduce16(acc[r][0], acc[r][1]) + reduce16(macc[r][0], macc[r][1]);
}

// Weight rows j .. j + 3 of a kernel that takes one row of x four columns at a time, and the
// rows kAhead on, asked for block by block meanwhile (prefetch_span, beyond them into L2).
struct FourRows {
  const uint8_t* w[4];
  const uint8_t* ahead[4];
  int64_t beyond;
  FourRows(const QArgs& a, int64_t j, int64_t j1) : beyond(beyond_rows(a)) {
    for (int c = 0; c < 4; ++c) {
      w[c] = a.w + (j + c) * a.ldw;
      ahead[c] = row_ahead(a, j + c, j1);
    }
  }
  // Asks for bytes [off, off + n) of column c's row ahead, when it is this task's.
  void prefetch(int c, int64_t off, int64_t n) const {
    if (ahead[c]) prefetch_span(ahead[c] + off, n, beyond);
  }
};

// One row of x against 4 q8_0 weight rows (columns j .. j + 3) at once: per block each
// column's 8 int32 lanes (as products_32 forms them), the four reduced together, then one f32
// step for the four columns. Nothing is prepared in memory: one row has no other rows to share
// a prepared block with.
void four_cols_q8_0(const QArgs& a, int64_t j, int64_t j1) {
  constexpr int64_t bytes = ggml::block_layout(ggml::kQ8_0).bytes;
  const int64_t nb = a.k / 32;
  const FourRows weights(a, j, j1);
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x.q + 32 * b));
    __m256i isum[4];
    uint16_t d[4];
    for (int c = 0; c < 4; ++c) {
      const uint8_t* blk = weights.w[c] + bytes * b;
      weights.prefetch(c, bytes * b, bytes);
      d[c] = ggml::load_u16(blk);
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
      isum[c] = products_32(_mm256_sign_epi8(q, q), q, y);
    }
    // The four d in registers (F16C: exact), times d_y: each column's f32 product.
    const __m128 dw = _mm_cvtph_ps(
        _mm_setr_epi16(static_cast<short>(d[0]), static_cast<short>(d[1]), static_cast<short>(d[2]),
                       static_cast<short>(d[3]), 0, 0, 0, 0));
    const __m128 dd = _mm_mul_ps(dw, _mm_set1_ps(a.x.d[b]));
    acc = _mm_fmadd_ps(dd, _mm_cvtepi32_ps(sums_of_4(isum)), acc);
  }
  alignas(16) float out[4];
  _mm_store_ps(out, acc);
  for (int c = 0; c < 4; ++c) a.y[j + c] = out[c];
}

// q8_0: one row goes four columns at a time (four_cols_q8_0).
template <uint32_t T>
void cols_32(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  Q8Prep* P = reinterpret_cast<Q8Prep*>(scratch);
  const int64_t nb = a.k / 32;
  int64_t j = j0;
  if constexpr (T == ggml::kQ8_0)
    if (a.m == 1)
      for (; j + 4 <= j1; j += 4) four_cols_q8_0(a, j, j1);
  auto prepare = [&](int64_t jj, Q8Prep* p) {
    prep_32<T>(a.w + jj * a.ldw, nb, p, row_ahead(a, jj, j1));
  };
  const int64_t room = scratch_bytes(a.m, a.k);
  if constexpr (T == ggml::kQ8_0)
    column_blocks<4>(
        a.m, j, j1, P, nb, room, prepare,
        [&]<int MR>(const Q8Prep* p, int64_t i0, int64_t jj) { rows_q8_0<MR>(p, nb, a, i0, jj); });
  else
    column_blocks<kRows>(a.m, j, j1, P, nb, room, prepare,
                         [&]<int MR>(const Q8Prep* p, int64_t i0, int64_t jj) {
                           rows_32_lanes<MR>(p, nb, a, i0, jj);
                         });
}

template <uint32_t T>
void cols_32_min(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  MinPrep* P = reinterpret_cast<MinPrep*>(scratch);
  const int64_t nb = a.k / 32;
  column_blocks<kRows>(
      a.m, j0, j1, P, nb, scratch_bytes(a.m, a.k),
      [&](int64_t j, MinPrep* p) { prep_32_min<T>(a.w + j * a.ldw, nb, p, row_ahead(a, j, j1)); },
      [&]<int MR>(const MinPrep* p, int64_t i0, int64_t j) { rows_32_min<MR>(p, nb, a, i0, j); });
}

// q5_K.
void cols_q5_k(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  KPrep* P = reinterpret_cast<KPrep*>(scratch);
  const int64_t nb = a.k / 256;
  column_blocks<kRows>(
      a.m, j0, j1, P, nb, scratch_bytes(a.m, a.k),
      [&](int64_t j, KPrep* p) {
        prepare_row<176>(a, j, j1, nb, p, [](const uint8_t* blk, KPrep* q) { prep_q5_k(blk, q); });
      },
      [&]<int MR>(const KPrep* p, int64_t i0, int64_t j) { rows_k<MR>(p, nb, a, i0, j); });
}

// q4_K and q6_K (one int32 per row and block): the weight rows' blocks (Bytes long) prepared
// with prep a few columns at a time (column_blocks), then applied to the rows of x Tile at a time
// by rows (q4_K 8: with tiles of 4, 8 rows of the 1.5 B constructed model's q4_K matmuls took
// 1.1x as long on a Zen 3 VM, 5 rows 1.04x).
template <class Prep, int64_t Bytes, int Tile, class PrepBlock, class Rows>
void cols_one_int(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch, PrepBlock prep,
                  Rows rows) {
  const int64_t nb = a.k / 256;
  column_blocks<Tile>(
      a.m, j0, j1, reinterpret_cast<Prep*>(scratch), nb, scratch_bytes(a.m, a.k),
      [&](int64_t j, Prep* p) { prepare_row<Bytes>(a, j, j1, nb, p, prep); },
      [&]<int MR>(const Prep* p, int64_t i0, int64_t j) {
        rows.template operator()<MR>(p, nb, a, i0, j);
      });
}

// q4_K and q6_K for up to 4 rows (one tile), columns j .. j1 - 1: each block (Bytes long) is
// prepared with prep just before rows applies it, in registers and the stack, and the same block
// of the row kAhead on is asked for meanwhile.
template <class Prep, int64_t Bytes, class PrepBlock, class Rows>
void cols_prepared_in_place(const QArgs& a, int64_t j, int64_t j1, PrepBlock prep, Rows rows) {
  const int64_t nb = a.k / 256;
  for (; j < j1; ++j) {
    const uint8_t* w = a.w + j * a.ldw;
    const uint8_t* ahead = row_ahead(a, j, j1);
    const int64_t beyond = beyond_rows(a);
    for_row_tiles<4>(a.m, [&]<int MR>(int64_t i0) {
      Prep p;
      rows.template operator()<MR>(nb, a, i0, j, [&](int64_t b) -> const Prep& {
        if (ahead && i0 == 0) prefetch_span(ahead + Bytes * b, Bytes, beyond);
        prep(w + Bytes * b, &p);
        return p;
      });
    });
  }
}

// One row of x against 4 q4_K weight rows (columns j .. j + 3) at once, in the lanes of one
// f32 vector: per block each column's isum and msum as 8 int32 lanes (as rows_q4_k forms
// them), the four reduced together, then the block's two f32 steps for the four columns.
// Nothing is prepared in memory: one row has no other rows to share a prepared block with.
void four_cols_q4_k(const QArgs& a, int64_t j, int64_t j1) {
  const int64_t nb = a.k / 256;
  const __m256i low4 = _mm256_set1_epi8(15);
  const FourRows weights(a, j, j1);
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const int8_t* y = a.x.q + 256 * b;
    for (int c = 0; c < 4; ++c) weights.prefetch(c, 144 * b, 144);
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x.bsum16 + 16 * b));
    __m256i sc16[4], isum[4], msum[4];
    alignas(16) uint16_t d[4], dmin[4];
    for (int c = 0; c < 4; ++c) {
      const uint8_t* blk = weights.w[c] + 144 * b;
      d[c] = ggml::load_u16(blk);
      dmin[c] = ggml::load_u16(blk + 2);
      const __m128i sm = scales_mins(blk);
      sc16[c] = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));  // scales 0..7, both halves
      const __m128i mn = mins16(sm);                                 // lanes 2g and 2g + 1: min g
      msum[c] = _mm256_madd_epi16(
          bs, _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn)));
      isum[c] = _mm256_setzero_si256();
    }
    for (int p = 0; p < 4; ++p) {  // sub-blocks 2p (low nibbles) and 2p + 1 (high nibbles)
      const __m256i ylo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + 64 * p));
      const __m256i yhi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + 64 * p + 32));
      // pshufb patterns broadcasting int16 lane 2p (2p + 1) of sc16: bytes 4p, 4p + 1 (+ 2)
      const __m256i pick_lo = _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * p)));
      const __m256i pick_hi = _mm256_set1_epi16(static_cast<short>(0x0100 + 0x0202 * (2 * p + 1)));
      for (int c = 0; c < 4; ++c) {
        const __m256i q = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(weights.w[c] + 144 * b + 16 + 32 * p));
        const __m256i lo = _mm256_and_si256(q, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        isum[c] =
            _mm256_add_epi32(isum[c], _mm256_madd_epi16(_mm256_maddubs_epi16(lo, ylo),
                                                        _mm256_shuffle_epi8(sc16[c], pick_lo)));
        isum[c] =
            _mm256_add_epi32(isum[c], _mm256_madd_epi16(_mm256_maddubs_epi16(hi, yhi),
                                                        _mm256_shuffle_epi8(sc16[c], pick_hi)));
      }
    }
    const __m128 dy = _mm_set1_ps(a.x.d[b]);
    const __m128 dd =
        _mm_mul_ps(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d))), dy);
    const __m128 dm =
        _mm_mul_ps(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(dmin))), dy);
    acc = _mm_fmadd_ps(dd, _mm_cvtepi32_ps(sums_of_4(isum)), acc);
    acc = _mm_fnmadd_ps(dm, _mm_cvtepi32_ps(sums_of_4(msum)), acc);  // fma(-dm, msum, acc)
  }
  alignas(16) float out[4];
  _mm_store_ps(out, acc);
  for (int c = 0; c < 4; ++c) a.y[j + c] = out[c];
}

// q4_K and q6_K: up to 4 rows (one tile) prepare each block just before applying it, in
// registers and the stack (cols_prepared_in_place), more rows prepare each weight row once
// into the scratch and apply it Tile rows at a time (cols_one_int). rows<MR>(n, q, i0, j,
// block) is the kernel for both. For q6_K the whole row prepared first took 192 us for one
// row of k 1024, n 4096 on one thread, against 143 prepared in place.
template <class Prep, int64_t Bytes, int Tile, class PrepBlock, class Rows>
void cols_k_one_int(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch, PrepBlock prep,
                    Rows rows) {
  if (a.m <= 4) {
    cols_prepared_in_place<Prep, Bytes>(a, j0, j1, prep, rows);
    return;
  }
  cols_one_int<Prep, Bytes, Tile>(
      a, j0, j1, scratch, prep,
      [rows]<int MR>(const Prep* p, int64_t n, const QArgs& q, int64_t i0, int64_t jj) {
        rows.template operator()<MR>(n, q, i0, jj, [p](int64_t b) -> const Prep& { return p[b]; });
      });
}

// q4_K: one row goes four columns at a time (four_cols_q4_k). On a Zen 3 VM, one thread, the
// 1.5 B constructed model's q4_K matmuls took 0.93x as long for one row with each block
// prepared in place as with the whole row prepared in the scratch first (interleaved runs).
void cols_q4_k(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  int64_t j = j0;
  if (a.m == 1)
    for (; j + 4 <= j1; j += 4) four_cols_q4_k(a, j, j1);
  cols_k_one_int<Q4KPrep, 144, 8>(
      a, j, j1, scratch, [](const uint8_t* blk, Q4KPrep* p) { prep_q4_k(blk, p); },
      []<int MR, class B>(int64_t n, const QArgs& q, int64_t i0, int64_t jj, B block) {
        rows_q4_k<MR>(n, q, i0, jj, block);
      });
}

void cols_q6_k(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  cols_k_one_int<Q6KPrep, 210, 4>(
      a, j0, j1, scratch, [](const uint8_t* blk, Q6KPrep* p) { prep_q6_k(blk, p); },
      []<int MR, class B>(int64_t n, const QArgs& q, int64_t i0, int64_t jj, B block) {
        rows_q6_k<MR>(n, q, i0, jj, block);
      });
}

}  // namespace

void cols_avx2(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  switch (a.dtype) {
    case SPECD_DTYPE_Q4_K:
      return cols_q4_k(a, j0, j1, scratch);
    case SPECD_DTYPE_Q5_K:
      return cols_q5_k(a, j0, j1, scratch);
    case SPECD_DTYPE_Q6_K:
      return cols_q6_k(a, j0, j1, scratch);
    case SPECD_DTYPE_Q2_K:
    case SPECD_DTYPE_Q3_K:
    case SPECD_DTYPE_IQ4_XS:
      return cols_lowbit_avx2(a, j0, j1, scratch);
    case SPECD_DTYPE_Q4_1:
    case SPECD_DTYPE_Q5_1:
      return with_dtype<ggml::kQ4_1, ggml::kQ5_1>(
          a.dtype, "cols_avx2", [&]<uint32_t T>() { cols_32_min<T>(a, j0, j1, scratch); });
    default:  // one scale per block of 32
      return with_dtype<ggml::kQ4_0, ggml::kQ5_0, ggml::kIQ4_NL, ggml::kQ8_0, ggml::kMXFP4>(
          a.dtype, "cols_avx2", [&]<uint32_t T>() { cols_32<T>(a, j0, j1, scratch); });
  }
}

}  // namespace specd::cpu::qint
