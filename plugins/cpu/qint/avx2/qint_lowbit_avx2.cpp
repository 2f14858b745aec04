// The integer family for q2_K, q3_K and iq4_xs on AVX2 + FMA (called only after
// avx2_available()): qint.hpp's 16 lanes in two 8-lane halves (lanes 0..7 sum elements
// 64p + 0..31, lanes 8..15 elements 64p + 32..63), pmaddubsw + pmaddwd for the integer sums.
// Each weight row is prepared block by block into the task's scratch once (unsigned quants or
// magnitudes in element order, signs, scale vectors) and applied to all m rows; the bits equal
// the generic kernel's (qint_lowbit_generic.cpp).
#include <immintrin.h>

#include "qint/qint_lowbit.hpp"
#include "qint/qint_lowbit_simd.hpp"
#include "qint/qint_prefetch.hpp"
#include "qint/qint_reduce.hpp"
#include "qint/qint_tiles.hpp"

namespace specd::cpu::qint {
namespace {

using lowbit_simd::f16;

constexpr int kRows = 2;  // rows of x per register tile

// A prepared block: for h < 8, elements 32h .. 32h + 31 as unsigned bytes in w[h] (q2_K: the
// quants; q3_K, iq4_xs: magnitudes |w_e|), the signed integers in s[h] (q3_K, iq4_xs: they
// carry the sign over to y), the int16 scale of each int16 pair in sc[h]; q2_K's 16 mins as
// int16 lanes in mc, and d, dmin.
struct alignas(32) Prep {
  __m256i w[8];
  __m256i s[8];
  __m256i sc[8];
  __m256i mc;
  float d, dmin;
};

// int16 lanes 0..7 = a, 8..15 = b.
__m256i two_scales(int a, int b) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(b)),
                          _mm_set1_epi16(static_cast<short>(a)));
}

__m256i load32(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// q2_K, 84 B: scales[16] at 0, qs[64] at 16, d at 80, dmin at 82. Element 128c + 32u + l is
// bits 2u, 2u + 1 of qs byte 32c + l.
void prep_q2_k(const uint8_t* blk, Prep* p) {
  p->d = f16(blk + 80);
  p->dmin = f16(blk + 82);
  const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
  p->mc = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), _mm_set1_epi8(15)));
  const __m256i low2 = _mm256_set1_epi8(3);
  for (int c = 0; c < 2; ++c) {
    const __m256i q = load32(blk + 16 + 32 * c);
    for (int u = 0; u < 4; ++u) {
      const int h = 4 * c + u;
      p->w[h] = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * u)), low2);
      p->sc[h] = two_scales(blk[2 * h] & 15, blk[2 * h + 1] & 15);
    }
  }
}

// q3_K, 110 B: hmask[32] at 0, qs[64] at 32, scales[12] at 96, d at 108. Element
// 128c + 32u + l: bits 2u, 2u + 1 of qs byte 32c + l, minus 4 unless bit 4c + u of hmask
// byte l is set.
void prep_q3_k(const uint8_t* blk, Prep* p) {
  p->d = f16(blk + 108);
  alignas(16) int8_t sc[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(sc), lowbit_simd::q3_k_scales(blk + 96));
  const __m256i low2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), four = _mm256_set1_epi8(4);
  const __m256i hm = load32(blk);
  for (int c = 0; c < 2; ++c) {
    const __m256i q = load32(blk + 32 + 32 * c);
    for (int u = 0; u < 4; ++u) {
      const int h = 4 * c + u;
      const __m256i lo = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * u)), low2);
      const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(h)), one);
      const __m256i v = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 2)), four);
      p->s[h] = v;
      p->w[h] = _mm256_abs_epi8(v);
      p->sc[h] = two_scales(sc[2 * h], sc[2 * h + 1]);
    }
  }
}

// iq4_xs, 136 B: d at 0, scales at 2..7, qs[128] at 8. Sub-block h is the 16 bytes at
// 8 + 16h: elements 32h + t in the low nibbles, 32h + 16 + t in the high ones.
void prep_iq4_xs(const uint8_t* blk, Prep* p) {
  p->d = f16(blk);
  alignas(16) int16_t sc[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(sc), lowbit_simd::iq4_xs_scales(blk));
  const __m128i l = lowbit_simd::iq4_levels(), low4 = _mm_set1_epi8(15);
  const __m256i levels = _mm256_set_m128i(l, l);
  for (int h = 0; h < 8; ++h) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 8 + 16 * h));
    const __m256i nib =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low4), _mm_and_si128(q, low4));
    const __m256i v = _mm256_shuffle_epi8(levels, nib);
    p->s[h] = v;
    p->w[h] = _mm256_abs_epi8(v);
    p->sc[h] = _mm256_set1_epi16(sc[h]);
  }
}

template <uint32_t T>
void prep(const uint8_t* blk, Prep* p) {
  if constexpr (T == ggml::kQ2_K) {
    prep_q2_k(blk, p);
  } else if constexpr (T == ggml::kQ3_K) {
    prep_q3_k(blk, p);
  } else {
    prep_iq4_xs(blk, p);
  }
}

// Rows i0 .. i0 + MR - 1 of output column j over the prepared row P.
template <uint32_t T, int MR>
void rows(const Prep* P, int64_t nb, const QArgs& a, int64_t i0, int64_t j) {
  constexpr bool mins = T == ggml::kQ2_K;
  const int64_t k = a.k;
  __m256 lo[MR], hi[MR], macc[MR];
  for (int r = 0; r < MR; ++r) lo[r] = hi[r] = macc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const Prep& p = P[b];
    const __m256 dw = _mm256_set1_ps(p.d), dmw = _mm256_set1_ps(p.dmin);
    for (int r = 0; r < MR; ++r) {
      const int64_t row = i0 + r;
      const int8_t* y = a.x.q + row * k + 256 * b;
      __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
      for (int h = 0; h < 8; h += 2) {
        __m256i y0 = load32(reinterpret_cast<const uint8_t*>(y + 32 * h));
        __m256i y1 = load32(reinterpret_cast<const uint8_t*>(y + 32 * h + 32));
        if constexpr (!mins) {  // |w| * (y with w's sign) = w * y; |w| <= 127 keeps int16 pairs
          y0 = _mm256_sign_epi8(y0, p.s[h]);
          y1 = _mm256_sign_epi8(y1, p.s[h + 1]);
        }
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_maddubs_epi16(p.w[h], y0), p.sc[h]));
        s1 = _mm256_add_epi32(s1,
                              _mm256_madd_epi16(_mm256_maddubs_epi16(p.w[h + 1], y1), p.sc[h + 1]));
      }
      const __m256 dy = _mm256_set1_ps(a.x.d[row * (k / 256) + b]);
      const __m256 dd = _mm256_mul_ps(dw, dy);
      lo[r] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(s0), lo[r]);
      hi[r] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(s1), hi[r]);
      if constexpr (mins) {
        const __m256i bs = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(a.x.bsum16 + row * (k / 16) + 16 * b));
        const __m256i msum = _mm256_madd_epi16(bs, p.mc);
        macc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dmw, dy), _mm256_cvtepi32_ps(msum), macc[r]);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    float v = reduce16(lo[r], hi[r]);
    if constexpr (mins) v -= reduce8(macc[r]);
    a.y[(i0 + r) * a.ldy + j] = v;
  }
}

template <uint32_t T>
void cols(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  static_assert(sizeof(Prep) <= 4 * 256, "a prepared block must fit qint::scratch_bytes");
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  Prep* P = reinterpret_cast<Prep*>(scratch);
  const int64_t nb = a.k / 256;
  column_blocks<kRows>(
      a.m, j0, j1, P, nb, scratch_bytes(a.m, a.k),
      [&](int64_t j, Prep* p) {
        prepare_row<bytes>(a, j, j1, nb, p, [](const uint8_t* blk, Prep* q) { prep<T>(blk, q); });
      },
      [&]<int MR>(const Prep* p, int64_t i0, int64_t j) { rows<T, MR>(p, nb, a, i0, j); });
}

}  // namespace

void cols_lowbit_avx2(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  with_dtype<ggml::kQ2_K, ggml::kQ3_K, ggml::kIQ4_XS>(
      a.dtype, "cols_lowbit_avx2", [&]<uint32_t T>() { cols<T>(a, j0, j1, scratch); });
  _mm256_zeroupper();  // callers run SSE code (libm, the generic ops): no dirty upper state
}

}  // namespace specd::cpu::qint
