// The integer family for q2_K, q3_K and iq4_xs on AVX-512 (F/BW/VL/DQ + VNNI; called only
// after that CPU check). Each weight block is decoded in registers in its stored order (one
// 64-byte load holds the quants of 256 (q2_K, q3_K) or 128 (iq4_xs) elements; immediate
// shifts and masks split it) and applied to a tile of up to 8 rows of x, which are reordered
// once per task to the order the decoding leaves the elements in (reorder_rows). The int32
// sums then hold qint.hpp's lanes in another order (two partial sums per lane) and are
// regrouped before the block's f32 step: integers are exact, so the bits equal the generic
// kernel's (qint_lowbit_generic.cpp), and no step depends on the tile or on m.
//   One row: vpmaddubsw (unsigned quant or magnitude, y with the weight's sign) + vpdpwssd
//   (scale) per 64 values. Several rows, q2_K and q3_K: the products s_e * w_e fit a byte
//   (q2_K: sc * q in 0..45; q3_K: |s * w| <= 32 * 4 = 128, the sign in a mask that negates
//   y), formed once per tile, then one vpdpbusd per 64 values and row.
#include <immintrin.h>

#include "qint/qint_lowbit.hpp"
#include "qint/qint_lowbit_simd.hpp"
#include "qint/qint_reduce.hpp"

namespace specd::cpu::qint {
namespace {

using lowbit_simd::f16;

constexpr int kTile = 8;  // rows of x per tile

template <uint32_t T>
float finish(__m512 acc, __m256 macc) {
  if constexpr (T == ggml::kQ2_K) return reduce16(acc) - reduce8(macc);
  return reduce16(acc);
}

// x's rows in the weights' stored order, per 256-value block. q2_K, q3_K: element
// 128c + 32u + l sits at bits 2u of quant byte 32c + l, so for u < 4 the 64 bytes
// y[32u .. + 31], y[128 + 32u .. + 31]. iq4_xs: element 32j + 16h + t sits at nibble h of
// byte 16j + t, so for c < 2, h < 2, j = 4c .. 4c + 3 the 16 bytes y[32j + 16h .. + 15].
template <uint32_t T>
void reorder_rows(const int8_t* y, int64_t m, int64_t k, int8_t* yr) {
  for (int64_t b = 0; b < m * k / 256; ++b) {
    const int8_t* s = y + 256 * b;
    int8_t* o = yr + 256 * b;
    if constexpr (T == ggml::kIQ4_XS) {
      for (int c = 0; c < 2; ++c)
        for (int h = 0; h < 2; ++h)
          for (int j = 4 * c; j < 4 * c + 4; ++j, o += 16)
            __builtin_memcpy(o, s + 32 * j + 16 * h, 16);
    } else {
      for (int u = 0; u < 4; ++u, o += 64) {
        __builtin_memcpy(o, s + 32 * u, 32);
        __builtin_memcpy(o + 32, s + 128 + 32 * u, 32);
      }
    }
  }
}

// Scale indices of the stored order. q2_K, q3_K, shift 2u: 128-bit lane L holds elements of
// sub-block (2u, 2u + 1, 8 + 2u, 9 + 2u)[L]; `bytes` picks it per byte (vpshufb), `pairs` per
// int16 lane (vpermw). iq4_xs, 64 bytes c: 128-bit lane L, either nibble, sub-block 4c + L.
struct StoredIndex {
  __m512i bytes[4], pairs[4], iq4[2];
  __m512i levels;  // the 16 iq4 levels in each 128-bit lane
};

StoredIndex stored_index() {
  StoredIndex s;
  alignas(64) int8_t b8[64];
  alignas(64) int16_t b16[32];
  for (int u = 0; u < 4; ++u) {
    const int sub[4] = {2 * u, 2 * u + 1, 8 + 2 * u, 9 + 2 * u};
    for (int t = 0; t < 64; ++t) b8[t] = static_cast<int8_t>(sub[t / 16]);
    for (int t = 0; t < 32; ++t) b16[t] = static_cast<int16_t>(sub[t / 8]);
    s.bytes[u] = _mm512_load_si512(b8);
    s.pairs[u] = _mm512_load_si512(b16);
  }
  for (int c = 0; c < 2; ++c) {
    for (int t = 0; t < 32; ++t) b16[t] = static_cast<int16_t>(4 * c + t / 8);
    s.iq4[c] = _mm512_load_si512(b16);
  }
  s.levels = _mm512_broadcast_i32x4(lowbit_simd::iq4_levels());
  return s;
}

// 32 bytes at p in both halves of a register.
__m512i broadcast32(const uint8_t* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// q2_K and q3_K partial sums: sum[0] holds lanes 0..7 in both 256-bit halves, sum[1] lanes
// 8..15.
__m512i regroup_2bit(__m512i s0, __m512i s1) {
  return _mm512_add_epi32(_mm512_shuffle_i64x2(s0, s1, 0x44), _mm512_shuffle_i64x2(s0, s1, 0xEE));
}

// iq4_xs partial sums of the low (s0) and high (s1) nibbles: 128-bit lane L of s_h holds lanes
// 4h + 8 (L & 1) .. + 3.
__m512i regroup_iq4(__m512i s0, __m512i s1) {
  const __m512i s = regroup_2bit(s0, s1);  // [l0 + l2, l1 + l3, h0 + h2, h1 + h3]
  return _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(3, 1, 2, 0));
}

// acc, macc += the f32 terms of block b with integer sums isum for one row of x.
template <uint32_t T>
[[gnu::always_inline]] inline void block_terms(__m512i isum, float dw, float dmw, __m256i mc,
                                               int64_t b, const QArgs& a, int64_t row, __m512& acc,
                                               __m256& macc) {
  const int64_t k = a.k;
  const float dy = a.x.d[row * (k / 256) + b];
  acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(dw), _mm512_set1_ps(dy)),
                        _mm512_cvtepi32_ps(isum), acc);
  if constexpr (T == ggml::kQ2_K) {
    const __m256i bs =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x.bsum16 + row * (k / 16) + 16 * b));
    const __m256 dm = _mm256_mul_ps(_mm256_set1_ps(dmw), _mm256_set1_ps(dy));
    macc = _mm256_fmadd_ps(dm, _mm256_cvtepi32_ps(_mm256_madd_epi16(bs, mc)), macc);
  }
}

// Bytes q * s for q < 2^Bits, bit by bit with masked adds (AVX-512 has no byte multiply);
// every partial sum stays below 256.
template <int Bits>
__m512i times(__m512i q, __m512i s) {
  __m512i r = _mm512_setzero_si512();
  for (int i = 0; i < Bits; ++i) {
    const __mmask64 bit = _mm512_test_epi8_mask(q, _mm512_set1_epi8(static_cast<char>(1 << i)));
    r = _mm512_mask_add_epi8(r, bit, r, s);
    s = _mm512_add_epi8(s, s);
  }
  return r;
}

// One q2_K or q3_K block in stored order. q2_K, 84 B: scales[16] at 0, qs[64] at 16, d at 80,
// dmin at 82. q3_K, 110 B: hmask[32] at 0, qs[64] at 32, scales[12] at 96, d at 108; the
// 2-bit quant minus 4 unless hmask bit 4c + u of byte l is set.
template <uint32_t T>
struct TwoBit {
  static constexpr bool q2 = T == ggml::kQ2_K;
  __m512i q;   // the 64 quant bytes
  __m512i hm;  // q3_K: hmask, bits 4c + u moved to bit u in half c
  __m128i sc;  // the 16 scales as bytes (q2_K: unsigned 0..15; q3_K: signed)
  __m256i mc;  // q2_K: the 16 mins as int16
  float d, dmin;

  [[gnu::always_inline]] explicit TwoBit(const uint8_t* blk) {
    const __m128i low4 = _mm_set1_epi8(15);
    if constexpr (q2) {
      const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
      sc = _mm_and_si128(s, low4);
      mc = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), low4));
      hm = _mm512_setzero_si512();
      d = f16(blk + 80);
      dmin = f16(blk + 82);
    } else {
      sc = lowbit_simd::q3_k_scales(blk + 96);
      mc = _mm256_setzero_si256();
      const __m512i cnt = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
      hm = _mm512_srlv_epi16(broadcast32(blk), cnt);
      d = f16(blk + 108);
      dmin = 0;
    }
    q = _mm512_loadu_si512(blk + (q2 ? 16 : 32));
  }

  // Shift 2u: quants (q2_K) or magnitudes |w| (q3_K), and (q3_K) the elements with w < 0.
  [[gnu::always_inline]] __m512i quants(int u, __mmask64* neg) const {
    const __m512i lo = _mm512_and_si512(_mm512_srli_epi16(q, 2 * u), _mm512_set1_epi8(3));
    if constexpr (q2) {
      *neg = 0;
      return lo;
    } else {
      *neg = _mm512_testn_epi8_mask(hm, _mm512_set1_epi8(static_cast<char>(1 << u)));
      return _mm512_mask_sub_epi8(lo, *neg, _mm512_set1_epi8(4), lo);  // 4 - lo where negative
    }
  }
};

// acc, macc += one q2_K / q3_K block's terms for rows i0 .. i0 + MR - 1 (reordered, yr).
template <uint32_t T, int MR>
[[gnu::always_inline]] inline void block_2bit(const uint8_t* blk, int64_t b, const QArgs& a,
                                              const int8_t* yr, int64_t i0, const StoredIndex& ix,
                                              __m512* acc, __m256* macc) {
  const TwoBit<T> w(blk);
  if constexpr (MR == 1) {  // vpmaddubsw + vpdpwssd with the int16 scales
    const __m512i sc16 = T == ggml::kQ2_K ? _mm512_castsi256_si512(_mm256_cvtepu8_epi16(w.sc))
                                          : _mm512_castsi256_si512(_mm256_cvtepi8_epi16(w.sc));
    const int8_t* y = yr + i0 * a.k + 256 * b;
    __m512i sum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int u = 0; u < 4; ++u) {
      __mmask64 neg;
      const __m512i q = w.quants(u, &neg);
      const __m512i yv =
          _mm512_mask_sub_epi8(_mm512_loadu_si512(y + 64 * u), neg, _mm512_setzero_si512(),
                               _mm512_loadu_si512(y + 64 * u));
      sum[u & 1] = _mm512_dpwssd_epi32(sum[u & 1], _mm512_maddubs_epi16(q, yv),
                                       _mm512_permutexvar_epi16(ix.pairs[u], sc16));
    }
    block_terms<T>(regroup_2bit(sum[0], sum[1]), w.d, w.dmin, w.mc, b, a, i0, acc[0], macc[0]);
  } else {  // byte products |s w| once, then vpdpbusd per row
    constexpr int kBits = T == ggml::kQ2_K ? 2 : 3;  // q2_K: q < 4; q3_K: |w| <= 4
    const __m512i mag = _mm512_broadcast_i32x4(_mm_abs_epi8(w.sc));
    const __m512i sign = _mm512_broadcast_i32x4(w.sc);
    __m512i p[4];
    __mmask64 neg[4];
    for (int u = 0; u < 4; ++u) {
      const __m512i q = w.quants(u, &neg[u]);
      p[u] = times<kBits>(q, _mm512_shuffle_epi8(mag, ix.bytes[u]));
      if constexpr (T == ggml::kQ3_K)
        neg[u] ^= _mm512_movepi8_mask(_mm512_shuffle_epi8(sign, ix.bytes[u]));
    }
#pragma GCC unroll 8  // accumulators in registers
    for (int r = 0; r < MR; ++r) {
      const int8_t* y = yr + (i0 + r) * a.k + 256 * b;
      __m512i sum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
      for (int u = 0; u < 4; ++u) {
        __m512i yv = _mm512_loadu_si512(y + 64 * u);
        if constexpr (T == ggml::kQ3_K)
          yv = _mm512_mask_sub_epi8(yv, neg[u], _mm512_setzero_si512(), yv);
        sum[u & 1] = _mm512_dpbusd_epi32(sum[u & 1], p[u], yv);  // |s w| <= 128: exact
      }
      block_terms<T>(regroup_2bit(sum[0], sum[1]), w.d, w.dmin, w.mc, b, a, i0 + r, acc[r],
                     macc[r]);
    }
  }
}

// acc += one iq4_xs block's terms for rows i0 .. i0 + MR - 1. iq4_xs, 136 B: d at 0, scales at
// 2..7, qs[128] at 8 (sub-block j: 16 bytes at 8 + 16j, elements 32j + t low nibbles,
// 32j + 16 + t high). s * level needs 12 bits: vpmaddubsw + vpdpwssd for every row.
template <int MR>
[[gnu::always_inline]] inline void block_iq4_xs(const uint8_t* blk, int64_t b, const QArgs& a,
                                                const int8_t* yr, int64_t i0, const StoredIndex& ix,
                                                __m512* acc) {
  const __m512i sc16 = _mm512_castsi128_si512(lowbit_simd::iq4_xs_scales(blk));
  const __m512i low4 = _mm512_set1_epi8(15);
  __m512i mag[4], sc[2];  // mag[2c + h]: bytes c, nibble h
  __mmask64 neg[4];
  for (int c = 0; c < 2; ++c) {
    const __m512i z = _mm512_loadu_si512(blk + 8 + 64 * c);
    sc[c] = _mm512_permutexvar_epi16(ix.iq4[c], sc16);
    for (int h = 0; h < 2; ++h) {
      const __m512i v =
          _mm512_shuffle_epi8(ix.levels, _mm512_and_si512(h ? _mm512_srli_epi16(z, 4) : z, low4));
      neg[2 * c + h] = _mm512_movepi8_mask(v);
      mag[2 * c + h] = _mm512_abs_epi8(v);
    }
  }
  const float d = f16(blk);
  __m256 none = _mm256_setzero_ps();
#pragma GCC unroll 8  // accumulators in registers
  for (int r = 0; r < MR; ++r) {
    const int8_t* y = yr + (i0 + r) * a.k + 256 * b;
    __m512i sum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int t = 0; t < 4; ++t) {  // |w| * (y negated where w < 0) = w * y, pairs in int16
      const __m512i yv =
          _mm512_mask_sub_epi8(_mm512_loadu_si512(y + 64 * t), neg[t], _mm512_setzero_si512(),
                               _mm512_loadu_si512(y + 64 * t));
      sum[t & 1] = _mm512_dpwssd_epi32(sum[t & 1], _mm512_maddubs_epi16(mag[t], yv), sc[t >> 1]);
    }
    block_terms<ggml::kIQ4_XS>(regroup_iq4(sum[0], sum[1]), d, 0.0f, _mm256_setzero_si256(), b, a,
                               i0 + r, acc[r], none);
  }
}

// Asks for the bytes kStreamAhead after [p, p + bytes), p being where a task's sequential
// weight stream is read now: spread over the blocks, the requests never queue up at once.
constexpr int64_t kStreamAhead = 8192;
inline void stream_ahead(const uint8_t* p, int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p) + kStreamAhead + o, _MM_HINT_T0);
}

// Output column j for rows i0 .. i0 + MR - 1.
template <uint32_t T, int MR>
void tile(const QArgs& a, const int8_t* yr, int64_t i0, int64_t j, const StoredIndex& ix) {
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  const uint8_t* w = a.w + j * a.ldw;
  __m512 acc[MR];
  __m256 macc[MR];
#pragma GCC unroll 8  // accumulators in registers
  for (int r = 0; r < MR; ++r) {
    acc[r] = _mm512_setzero_ps();
    macc[r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < a.k / 256; ++b) {
    const uint8_t* blk = w + bytes * b;
    stream_ahead(blk, bytes);
    if constexpr (T == ggml::kIQ4_XS)
      block_iq4_xs<MR>(blk, b, a, yr, i0, ix, acc);
    else
      block_2bit<T, MR>(blk, b, a, yr, i0, ix, acc, macc);
  }
  for (int r = 0; r < MR; ++r) a.y[(i0 + r) * a.ldy + j] = finish<T>(acc[r], macc[r]);
}

template <uint32_t T>
void cols(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  using Tile = void (*)(const QArgs&, const int8_t*, int64_t, int64_t, const StoredIndex&);
  static constexpr Tile tiles[kTile + 1] = {nullptr,    tile<T, 1>, tile<T, 2>,
                                            tile<T, 3>, tile<T, 4>, tile<T, 5>,
                                            tile<T, 6>, tile<T, 7>, tile<T, 8>};
  const StoredIndex ix = stored_index();
  int8_t* yr = reinterpret_cast<int8_t*>(scratch);  // m * k <= scratch_bytes(m, k)
  reorder_rows<T>(a.x.q, a.m, a.k, yr);
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t i0 = 0; i0 < a.m; i0 += kTile)
      tiles[a.m - i0 < kTile ? a.m - i0 : kTile](a, yr, i0, j, ix);
}

}  // namespace

void cols_lowbit_avx512(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  with_dtype<ggml::kQ2_K, ggml::kQ3_K, ggml::kIQ4_XS>(
      a.dtype, "cols_lowbit_avx512", [&]<uint32_t T>() { cols<T>(a, j0, j1, scratch); });
  _mm256_zeroupper();  // callers run SSE code (libm, the generic ops): no dirty upper state
}

}  // namespace specd::cpu::qint
