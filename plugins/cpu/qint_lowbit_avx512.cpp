// The integer family for q2_K, q3_K and iq4_xs on AVX-512 (F/BW/VL/DQ + VNNI; called only
// after that CPU check): qint.hpp's 16 lanes in one register, each the int32 sum that
// vpmaddubsw + vpdpwssd form over 4 consecutive elements of a 64-element group. For m > 1,
// each weight row is decoded block by block (unsigned quants or magnitudes in element order,
// sign masks, scale vectors) into the task's scratch once and applied to the rows of x four at
// a time; for m = 1 each block is decoded in registers in its stored order against x's row
// reordered to match. The bits equal the generic kernel's (qint_lowbit_generic.cpp).
#include <immintrin.h>

#include <type_traits>

#include "qint_lowbit.hpp"
#include "qint_lowbit_simd.hpp"

namespace specd::cpu::qint {
namespace {

using lowbit_simd::f16;

constexpr int kRows = 4;  // rows of x per register tile

float reduce8(__m256 v) {  // lanes l + 4, then l + 2, then l + 1
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

float reduce16(__m512 v) {  // lanes l + 8 first
  return reduce8(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

// 32 bytes at p in both halves of a register.
__m512i broadcast32(const uint8_t* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// int16 shift counts: a in the low half, b in the high half.
__m512i counts(int a, int b) {
  return _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(a)),
                            _mm256_set1_epi16(static_cast<short>(b)), 1);
}

// ---- m > 1: each weight row prepared once into the task's scratch ---------------------------

// q2_K, q3_K: the products s_e * w_e fit a byte (q2_K: sc * q in 0..45; q3_K: |s * w| <= 32 * 4
// = 128, the sign kept in a mask that negates y), so one vpdpbusd per 64 values and row forms
// qint.hpp's sums: the same integers with half the multiplies of vpmaddubsw + vpdpwssd.
// For g < 4: |s_e w_e| of elements 64g .. 64g + 63 in w[g], the elements with s_e w_e < 0
// in neg[g]; q2_K's 16 mins as int16 lanes in mc, and d, dmin.
struct alignas(64) BytePrep {
  __m512i w[4];
  __mmask64 neg[4];
  __m256i mc;
  float d, dmin;
};

// iq4_xs (s_e * w_e needs 12 bits): |w_e| in w[g], w_e < 0 in neg[g], the int16 scale of each
// int16 pair in sc[g], and d.
struct alignas(64) Prep {
  __m512i w[4];
  __m512i sc[4];
  __mmask64 neg[4];
  float d;
};

// Byte shuffle indices: byte t of group g takes sub-block 4g + t / 16 (16 elements per scale).
struct SubBlockIndex {
  __m512i g[4];
};

SubBlockIndex sub_block_index() {
  SubBlockIndex s;
  alignas(64) int8_t idx[64];
  for (int g = 0; g < 4; ++g) {
    for (int t = 0; t < 64; ++t) idx[t] = static_cast<int8_t>(4 * g + t / 16);
    s.g[g] = _mm512_load_si512(idx);
  }
  return s;
}

// iq4_xs: int16 lane u of group g takes scale 2g + u / 16 (32 elements per scale).
struct ScaleIndex {
  __m512i g[4];
};

ScaleIndex scale_index() {
  ScaleIndex s;
  alignas(64) int16_t idx[32];
  for (int g = 0; g < 4; ++g) {
    for (int u = 0; u < 32; ++u) idx[u] = static_cast<int16_t>(2 * g + u / 16);
    s.g[g] = _mm512_load_si512(idx);
  }
  return s;
}

// Bytes q * s for q < 2^Bits, bit by bit with masked adds (AVX-512 has no byte multiply);
// every partial sum stays below 256.
template <int Bits>
__m512i times(__m512i q, __m512i s) {
  __m512i r = _mm512_setzero_si512();
  for (int i = 0; i < Bits; ++i) {
    r = _mm512_mask_add_epi8(
        r, _mm512_test_epi8_mask(q, _mm512_set1_epi8(static_cast<char>(1 << i))), r, s);
    s = _mm512_add_epi8(s, s);
  }
  return r;
}

// q2_K, 84 B: scales[16] at 0, qs[64] at 16, d at 80, dmin at 82. q3_K, 110 B: hmask[32] at 0,
// qs[64] at 32, scales[12] at 96, d at 108. Element 128c + 32u + l is bits 2u, 2u + 1 of qs
// byte 32c + l (group g = 2c + h holds u = 2h and 2h + 1); q3_K subtracts 4 unless bit
// (e >> 5) of hmask byte e & 31 is set.
template <uint32_t T>
[[gnu::always_inline]] inline void prep_bytes(const uint8_t* blk, BytePrep* p,
                                              const SubBlockIndex& sb) {
  const __m128i low4 = _mm_set1_epi8(15);
  const __m512i low2 = _mm512_set1_epi8(3);
  if constexpr (T == ggml::kQ2_K) {
    p->d = f16(blk + 80);
    p->dmin = f16(blk + 82);
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
    p->mc = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), low4));
    const __m512i sc = _mm512_broadcast_i32x4(_mm_and_si128(s, low4));
    for (int g = 0; g < 4; ++g) {
      const int c = g >> 1, h = g & 1;
      const __m512i q = _mm512_and_si512(
          _mm512_srlv_epi16(broadcast32(blk + 16 + 32 * c), counts(4 * h, 4 * h + 2)), low2);
      p->w[g] = times<2>(q, _mm512_shuffle_epi8(sc, sb.g[g]));
      p->neg[g] = 0;
    }
  } else {
    p->d = f16(blk + 108);
    p->dmin = 0;
    p->mc = _mm256_setzero_si256();
    const __m128i s8 = lowbit_simd::q3_k_scales(blk + 96);
    const __m512i sc = _mm512_broadcast_i32x4(_mm_abs_epi8(s8));
    const __m512i sign = _mm512_broadcast_i32x4(s8);
    const __m512i one = _mm512_set1_epi8(1), four = _mm512_set1_epi8(4);
    const __m512i hm = broadcast32(blk);
    for (int g = 0; g < 4; ++g) {
      const int c = g >> 1, h = g & 1;
      const __m512i lo = _mm512_and_si512(
          _mm512_srlv_epi16(broadcast32(blk + 32 + 32 * c), counts(4 * h, 4 * h + 2)), low2);
      const __m512i hi = _mm512_and_si512(_mm512_srlv_epi16(hm, counts(2 * g, 2 * g + 1)), one);
      const __m512i v = _mm512_sub_epi8(_mm512_or_si512(lo, _mm512_slli_epi16(hi, 2)), four);
      p->w[g] = times<3>(_mm512_abs_epi8(v), _mm512_shuffle_epi8(sc, sb.g[g]));
      p->neg[g] = _mm512_movepi8_mask(v) ^ _mm512_movepi8_mask(_mm512_shuffle_epi8(sign, sb.g[g]));
    }
  }
}

// iq4_xs, 136 B: d at 0, scales at 2..7, qs[128] at 8. Sub-block j is the 16 bytes at
// 8 + 16j: elements 32j + t in the low nibbles, 32j + 16 + t in the high ones.
[[gnu::always_inline]] inline void prep_iq4_xs(const uint8_t* blk, Prep* p, const ScaleIndex& ix) {
  p->d = f16(blk);
  const __m512i sc16 = _mm512_castsi128_si512(lowbit_simd::iq4_xs_scales(blk));
  const __m512i levels = _mm512_broadcast_i32x4(lowbit_simd::iq4_levels());
  const __m256i low4 = _mm256_set1_epi8(15);
  for (int g = 0; g < 4; ++g) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 8 + 32 * g));
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, low4)),
                                         _mm256_and_si256(_mm256_srli_epi16(q, 4), low4), 1);
    // 128-bit lanes [low 2g, low 2g + 1, high 2g, high 2g + 1] to element order
    const __m512i nib = _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));
    const __m512i v = _mm512_shuffle_epi8(levels, nib);
    p->neg[g] = _mm512_movepi8_mask(v);
    p->w[g] = _mm512_abs_epi8(v);
    p->sc[g] = _mm512_permutexvar_epi16(ix.g[g], sc16);
  }
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
    const __m256i msum = _mm256_madd_epi16(bs, mc);
    const __m256 dm = _mm256_mul_ps(_mm256_set1_ps(dmw), _mm256_set1_ps(dy));
    macc = _mm256_fmadd_ps(dm, _mm256_cvtepi32_ps(msum), macc);
  }
}

// acc, macc += block b's terms for one row of x (qint.hpp's lanes): q2_K, q3_K.
template <uint32_t T>
[[gnu::always_inline]] inline void step(const BytePrep& p, int64_t b, const QArgs& a, int64_t row,
                                        __m512& acc, __m256& macc) {
  const int8_t* y = a.x.q + row * a.k + 256 * b;
  __m512i isum = _mm512_setzero_si512();
  for (int g = 0; g < 4; ++g) {
    __m512i yv = _mm512_loadu_si512(y + 64 * g);
    if constexpr (T == ggml::kQ3_K)
      yv = _mm512_mask_sub_epi8(yv, p.neg[g], _mm512_setzero_si512(), yv);
    isum = _mm512_dpbusd_epi32(isum, p.w[g], yv);  // |s w| <= 128, |y| <= 127: exact
  }
  block_terms<T>(isum, p.d, p.dmin, p.mc, b, a, row, acc, macc);
}

// The same for iq4_xs.
template <uint32_t T>
[[gnu::always_inline]] inline void step(const Prep& p, int64_t b, const QArgs& a, int64_t row,
                                        __m512& acc, __m256& macc) {
  const int8_t* y = a.x.q + row * a.k + 256 * b;
  __m512i isum = _mm512_setzero_si512();
  for (int g = 0; g < 4; ++g) {
    // |w| * (y negated where w < 0) = w * y; |w| <= 127 keeps the int16 pairs exact
    const __m512i yv = _mm512_mask_sub_epi8(_mm512_loadu_si512(y + 64 * g), p.neg[g],
                                            _mm512_setzero_si512(), _mm512_loadu_si512(y + 64 * g));
    isum = _mm512_dpwssd_epi32(isum, _mm512_maddubs_epi16(p.w[g], yv), p.sc[g]);
  }
  block_terms<T>(isum, p.d, 0.0f, _mm256_setzero_si256(), b, a, row, acc, macc);
}

template <uint32_t T>
float finish(__m512 acc, __m256 macc) {
  if constexpr (T == ggml::kQ2_K) return reduce16(acc) - reduce8(macc);
  return reduce16(acc);
}

template <uint32_t T, int MR, class P>
void rows(const P* prepared, int64_t nb, const QArgs& a, int64_t i0, int64_t j) {
  __m512 acc[MR];
  __m256 macc[MR];
  for (int r = 0; r < MR; ++r) {
    acc[r] = _mm512_setzero_ps();
    macc[r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b)
    for (int r = 0; r < MR; ++r) step<T>(prepared[b], b, a, i0 + r, acc[r], macc[r]);
  for (int r = 0; r < MR; ++r) a.y[(i0 + r) * a.ldy + j] = finish<T>(acc[r], macc[r]);
}

// Asks for weight row j + kAhead while row j is computed: the rows of a task are one
// sequential stream.
constexpr int kAhead = 4;
void prefetch_row(const QArgs& a, int64_t j, int64_t j1) {
  if (j + kAhead >= j1) return;
  const char* p = reinterpret_cast<const char*>(a.w + (j + kAhead) * a.ldw);
  for (int64_t o = 0; o < a.ldw; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
}

// Asks for the bytes kStreamAhead after [p, p + bytes), p being where the m = 1 weight stream
// is read now: spread over the blocks, the requests never queue up at once.
constexpr int64_t kStreamAhead = 8192;
inline void stream_ahead(const uint8_t* p, int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p) + kStreamAhead + o, _MM_HINT_T0);
}

// ---- m = 1: each block decoded in registers in its stored order ----------------------------
// One 64-byte load holds the quants of 128 (iq4_xs) or 256 (q2_K, q3_K) elements; the row of
// x is reordered once per task to the order the shifts and masks leave them in (reorder_row),
// and the int32 sums, whose lanes then hold qint.hpp's lanes in another order (two partial
// sums per lane), are regrouped before the block's f32 step: exact, the same bits.

// x's row in the weights' stored order, per 256-value block. q2_K, q3_K: element
// 128c + 32u + l sits at bits 2u of quant byte 32c + l, so for u < 4 the 64 bytes
// y[32u .. + 31], y[128 + 32u .. + 31]. iq4_xs: element 32j + 16h + t sits at nibble h of
// byte 16j + t, so for c < 2, h < 2, j = 4c .. 4c + 3 the 16 bytes y[32j + 16h .. + 15].
template <uint32_t T>
void reorder_row(const int8_t* y, int64_t k, int8_t* yr) {
  for (int64_t b = 0; b < k / 256; ++b) {
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

// Scale permutations of the stored order. q2_K, q3_K, shift 2u: int16 lane t < 16 pairs
// elements 32u + 2t (sub-block 2u + t / 8), t >= 16 elements 128 + 32u + 2(t - 16)
// (sub-block 8 + 2u + (t - 16) / 8). iq4_xs, 64 bytes c: lane t, either nibble, sub-block
// 4c + t / 8.
struct StoredIndex {
  __m512i two_bit[4], iq4[2];
};

StoredIndex stored_index() {
  StoredIndex s;
  alignas(64) int16_t idx[32];
  for (int u = 0; u < 4; ++u) {
    for (int t = 0; t < 32; ++t)
      idx[t] = static_cast<int16_t>(t < 16 ? 2 * u + t / 8 : 8 + 2 * u + (t - 16) / 8);
    s.two_bit[u] = _mm512_load_si512(idx);
  }
  for (int c = 0; c < 2; ++c) {
    for (int t = 0; t < 32; ++t) idx[t] = static_cast<int16_t>(4 * c + t / 8);
    s.iq4[c] = _mm512_load_si512(idx);
  }
  return s;
}

// acc, macc += one q2_K / q3_K block's terms; y: the block's 256 reordered values.
template <uint32_t T>
[[gnu::always_inline]] inline void block_m1_2bit(const uint8_t* blk, const int8_t* y, float dy,
                                                 const int16_t* bs, const StoredIndex& ix,
                                                 __m512& acc, __m256& macc) {
  constexpr bool q2 = T == ggml::kQ2_K;
  const __m128i low4 = _mm_set1_epi8(15);
  __m512i sc16, hm = _mm512_setzero_si512();
  __m256i mc = _mm256_setzero_si256();
  float d;
  if constexpr (q2) {
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
    sc16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(s, low4)));
    mc = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), low4));
    d = f16(blk + 80);
  } else {
    sc16 = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(lowbit_simd::q3_k_scales(blk + 96)));
    // hmask bit 4c + u of byte l for element 128c + 32u + l: bit u of this byte, half c
    hm = _mm512_srlv_epi16(broadcast32(blk), counts(0, 4));
    d = f16(blk + 108);
  }
  const __m512i q = _mm512_loadu_si512(blk + (q2 ? 16 : 32));
  const __m512i low2 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
  __m512i sum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
  for (int u = 0; u < 4; ++u) {
    __m512i w = _mm512_and_si512(_mm512_srli_epi16(q, 2 * u), low2);
    __m512i yv = _mm512_loadu_si512(y + 64 * u);
    if constexpr (!q2) {  // w - 4 unless the hmask bit is set: magnitude 4 - w, y negated
      const __mmask64 neg = _mm512_testn_epi8_mask(hm, _mm512_set1_epi8(static_cast<char>(1 << u)));
      w = _mm512_mask_sub_epi8(w, neg, four, w);
      yv = _mm512_mask_sub_epi8(yv, neg, _mm512_setzero_si512(), yv);
    }
    sum[u & 1] = _mm512_dpwssd_epi32(sum[u & 1], _mm512_maddubs_epi16(w, yv),
                                     _mm512_permutexvar_epi16(ix.two_bit[u], sc16));
  }
  // sum[0] holds lanes 0..7 in both halves, sum[1] lanes 8..15
  const __m512i isum = _mm512_add_epi32(_mm512_shuffle_i64x2(sum[0], sum[1], 0x44),
                                        _mm512_shuffle_i64x2(sum[0], sum[1], 0xEE));
  acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(d), _mm512_set1_ps(dy)),
                        _mm512_cvtepi32_ps(isum), acc);
  if constexpr (q2) {
    const __m256i msum =
        _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bs)), mc);
    const __m256 dm = _mm256_mul_ps(_mm256_set1_ps(f16(blk + 82)), _mm256_set1_ps(dy));
    macc = _mm256_fmadd_ps(dm, _mm256_cvtepi32_ps(msum), macc);
  }
}

// acc += one iq4_xs block's terms; y: the block's 256 reordered values.
[[gnu::always_inline]] inline void block_m1_iq4_xs(const uint8_t* blk, const int8_t* y, float dy,
                                                   const StoredIndex& ix, __m512i levels,
                                                   __m512& acc) {
  const __m512i sc16 = _mm512_castsi128_si512(lowbit_simd::iq4_xs_scales(blk));
  const __m512i low4 = _mm512_set1_epi8(15);
  __m512i sum[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};  // low, high nibbles
  for (int c = 0; c < 2; ++c) {
    const __m512i z = _mm512_loadu_si512(blk + 8 + 64 * c);
    const __m512i sc = _mm512_permutexvar_epi16(ix.iq4[c], sc16);
    for (int h = 0; h < 2; ++h) {
      const __m512i nib = _mm512_and_si512(h ? _mm512_srli_epi16(z, 4) : z, low4);
      const __m512i v = _mm512_shuffle_epi8(levels, nib);
      const __mmask64 neg = _mm512_movepi8_mask(v);
      const __m512i yv =
          _mm512_mask_sub_epi8(_mm512_loadu_si512(y + 128 * c + 64 * h), neg,
                               _mm512_setzero_si512(), _mm512_loadu_si512(y + 128 * c + 64 * h));
      sum[h] = _mm512_dpwssd_epi32(sum[h], _mm512_maddubs_epi16(_mm512_abs_epi8(v), yv), sc);
    }
  }
  // 128-bit lane j of sum[h] holds lanes 4h + 8 (j & 1) .. + 3 of qint.hpp's sums
  const __m512i s = _mm512_add_epi32(_mm512_shuffle_i64x2(sum[0], sum[1], 0x44),
                                     _mm512_shuffle_i64x2(sum[0], sum[1], 0xEE));
  const __m512i isum = _mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(3, 1, 2, 0));
  acc = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(f16(blk)), _mm512_set1_ps(dy)),
                        _mm512_cvtepi32_ps(isum), acc);
}

// Columns j0 .. j1 - 1 for one row of x.
template <uint32_t T>
void cols_m1(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  const StoredIndex ix = stored_index();
  const __m512i levels = _mm512_broadcast_i32x4(lowbit_simd::iq4_levels());
  int8_t* yr = reinterpret_cast<int8_t*>(scratch);
  reorder_row<T>(a.x.q, a.k, yr);
  const int64_t nb = a.k / 256;
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* w = a.w + j * a.ldw;
    __m512 acc = _mm512_setzero_ps();
    __m256 macc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = w + bytes * b;
      stream_ahead(blk, bytes);
      if constexpr (T == ggml::kIQ4_XS)
        block_m1_iq4_xs(blk, yr + 256 * b, a.x.d[b], ix, levels, acc);
      else
        block_m1_2bit<T>(blk, yr + 256 * b, a.x.d[b], a.x.bsum16 + 16 * b, ix, acc, macc);
    }
    a.y[j] = finish<T>(acc, macc);
  }
}

template <uint32_t T>
void cols(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  if (a.m == 1) return cols_m1<T>(a, j0, j1, scratch);
  constexpr bool iq4 = T == ggml::kIQ4_XS;
  using P = std::conditional_t<iq4, Prep, BytePrep>;
  static_assert(sizeof(P) <= 4 * 256, "a prepared block must fit qint::scratch_bytes");
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  const ScaleIndex ix = scale_index();
  const SubBlockIndex sb = sub_block_index();
  P* prepared = reinterpret_cast<P*>(scratch);
  const int64_t nb = a.k / 256;
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* w = a.w + j * a.ldw;
    prefetch_row(a, j, j1);
    for (int64_t b = 0; b < nb; ++b) {
      if constexpr (iq4)
        prep_iq4_xs(w + bytes * b, prepared + b, ix);
      else
        prep_bytes<T>(w + bytes * b, prepared + b, sb);
    }
    for (int64_t i0 = 0; i0 < a.m; i0 += kRows) {
      switch (a.m - i0 < kRows ? a.m - i0 : kRows) {
        case 1:
          rows<T, 1>(prepared, nb, a, i0, j);
          break;
        case 2:
          rows<T, 2>(prepared, nb, a, i0, j);
          break;
        case 3:
          rows<T, 3>(prepared, nb, a, i0, j);
          break;
        default:
          rows<T, 4>(prepared, nb, a, i0, j);
          break;
      }
    }
  }
}

}  // namespace

void cols_lowbit_avx512(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  switch (a.dtype) {
    case SPECD_DTYPE_Q2_K:
      return cols<ggml::kQ2_K>(a, j0, j1, scratch);
    case SPECD_DTYPE_Q3_K:
      return cols<ggml::kQ3_K>(a, j0, j1, scratch);
    default:
      return cols<ggml::kIQ4_XS>(a, j0, j1, scratch);
  }
}

}  // namespace specd::cpu::qint
