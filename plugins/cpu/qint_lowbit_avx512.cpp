// The integer family for q2_K, q3_K and iq4_xs on AVX-512 (F/BW/VL/DQ + VNNI; called only
// after that CPU check): qint.hpp's 16 lanes in one register, each the int32 sum that
// vpmaddubsw + vpdpwssd form over 4 consecutive elements of a 64-element group. Weights are
// decoded block by block (unsigned quants or magnitudes in element order, sign masks, scale
// vectors): in registers when m = 1, else once per row into the task's scratch and applied to
// the rows of x four at a time. The bits equal the generic kernel's (qint_lowbit_generic.cpp).
#include <immintrin.h>

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

// A prepared block: for g < 4, elements 64g .. 64g + 63 as unsigned bytes in w[g] (q2_K: the
// quants; q3_K, iq4_xs: magnitudes |w_e|) and the elements with w_e < 0 in neg[g]; the int16
// scale of each int16 pair in sc[g]; q2_K's 16 mins as int16 lanes in mc, and d, dmin.
struct alignas(64) Prep {
  __m512i w[4];
  __m512i sc[4];
  __mmask64 neg[4];
  __m256i mc;
  float d, dmin;
};

// Permutations of the int16 scales: int16 lane u of group g takes scale g * (64 / per) +
// u / (per / 2), per = elements per scale (16 or 32).
struct ScaleIndex {
  __m512i per16[4], per32[4];
};

ScaleIndex scale_index() {
  ScaleIndex s;
  alignas(64) int16_t idx[32];
  for (int g = 0; g < 4; ++g) {
    for (int u = 0; u < 32; ++u) idx[u] = static_cast<int16_t>(4 * g + u / 8);
    s.per16[g] = _mm512_load_si512(idx);
    for (int u = 0; u < 32; ++u) idx[u] = static_cast<int16_t>(2 * g + u / 16);
    s.per32[g] = _mm512_load_si512(idx);
  }
  return s;
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

// q2_K, 84 B: scales[16] at 0, qs[64] at 16, d at 80, dmin at 82. Element 128c + 32u + l is
// bits 2u, 2u + 1 of qs byte 32c + l; group g = 2c + h holds u = 2h and 2h + 1.
[[gnu::always_inline]] inline void prep_q2_k(const uint8_t* blk, Prep* p, const ScaleIndex& ix) {
  p->d = f16(blk + 80);
  p->dmin = f16(blk + 82);
  const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
  const __m128i low4 = _mm_set1_epi8(15);
  const __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(s, low4)));
  p->mc = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), low4));
  const __m512i low2 = _mm512_set1_epi8(3);
  for (int g = 0; g < 4; ++g) {
    const int c = g >> 1, h = g & 1;
    p->w[g] = _mm512_and_si512(
        _mm512_srlv_epi16(broadcast32(blk + 16 + 32 * c), counts(4 * h, 4 * h + 2)), low2);
    p->neg[g] = 0;
    p->sc[g] = _mm512_permutexvar_epi16(ix.per16[g], sc16);
  }
}

// q3_K, 110 B: hmask[32] at 0, qs[64] at 32, scales[12] at 96, d at 108. As q2_K's quants at
// 32, minus 4 unless bit (e >> 5) of hmask byte e & 31 is set.
[[gnu::always_inline]] inline void prep_q3_k(const uint8_t* blk, Prep* p, const ScaleIndex& ix) {
  p->d = f16(blk + 108);
  const __m512i sc16 =
      _mm512_castsi256_si512(_mm256_cvtepi8_epi16(lowbit_simd::q3_k_scales(blk + 96)));
  const __m512i low2 = _mm512_set1_epi8(3), one = _mm512_set1_epi8(1), four = _mm512_set1_epi8(4);
  const __m512i hm = broadcast32(blk);
  for (int g = 0; g < 4; ++g) {
    const int c = g >> 1, h = g & 1;
    const __m512i lo = _mm512_and_si512(
        _mm512_srlv_epi16(broadcast32(blk + 32 + 32 * c), counts(4 * h, 4 * h + 2)), low2);
    const __m512i hi = _mm512_and_si512(_mm512_srlv_epi16(hm, counts(2 * g, 2 * g + 1)), one);
    const __m512i v = _mm512_sub_epi8(_mm512_or_si512(lo, _mm512_slli_epi16(hi, 2)), four);
    p->neg[g] = _mm512_movepi8_mask(v);
    p->w[g] = _mm512_abs_epi8(v);
    p->sc[g] = _mm512_permutexvar_epi16(ix.per16[g], sc16);
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
    p->sc[g] = _mm512_permutexvar_epi16(ix.per32[g], sc16);
  }
}

template <uint32_t T>
[[gnu::always_inline]] inline void prep(const uint8_t* blk, Prep* p, const ScaleIndex& ix) {
  if constexpr (T == ggml::kQ2_K) {
    prep_q2_k(blk, p, ix);
  } else if constexpr (T == ggml::kQ3_K) {
    prep_q3_k(blk, p, ix);
  } else {
    prep_iq4_xs(blk, p, ix);
  }
}

// acc, macc += block b's terms for one row of x (qint.hpp's lanes).
template <uint32_t T>
[[gnu::always_inline]] inline void step(const Prep& p, int64_t b, const QArgs& a, int64_t row,
                                        __m512& acc, __m256& macc) {
  const int64_t k = a.k;
  const int8_t* y = a.x.q + row * k + 256 * b;
  __m512i isum = _mm512_setzero_si512();
  for (int g = 0; g < 4; ++g) {
    __m512i yv = _mm512_loadu_si512(y + 64 * g);
    // |w| * (y negated where w < 0) = w * y; |w| <= 127 keeps the int16 pairs exact
    if constexpr (T != ggml::kQ2_K)
      yv = _mm512_mask_sub_epi8(yv, p.neg[g], _mm512_setzero_si512(), yv);
    isum = _mm512_dpwssd_epi32(isum, _mm512_maddubs_epi16(p.w[g], yv), p.sc[g]);
  }
  const float dy = a.x.d[row * (k / 256) + b];
  const __m512 dd = _mm512_mul_ps(_mm512_set1_ps(p.d), _mm512_set1_ps(dy));
  acc = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(isum), acc);
  if constexpr (T == ggml::kQ2_K) {
    const __m256i bs =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x.bsum16 + row * (k / 16) + 16 * b));
    const __m256i msum = _mm256_madd_epi16(bs, p.mc);
    const __m256 dm = _mm256_mul_ps(_mm256_set1_ps(p.dmin), _mm256_set1_ps(dy));
    macc = _mm256_fmadd_ps(dm, _mm256_cvtepi32_ps(msum), macc);
  }
}

template <uint32_t T>
float finish(__m512 acc, __m256 macc) {
  if constexpr (T == ggml::kQ2_K) return reduce16(acc) - reduce8(macc);
  return reduce16(acc);
}

template <uint32_t T, int MR>
void rows(const Prep* P, int64_t nb, const QArgs& a, int64_t i0, int64_t j) {
  __m512 acc[MR];
  __m256 macc[MR];
  for (int r = 0; r < MR; ++r) {
    acc[r] = _mm512_setzero_ps();
    macc[r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b)
    for (int r = 0; r < MR; ++r) step<T>(P[b], b, a, i0 + r, acc[r], macc[r]);
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

template <uint32_t T>
void cols(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  static_assert(sizeof(Prep) <= 4 * 256, "a prepared block must fit qint::scratch_bytes");
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  const ScaleIndex ix = scale_index();
  Prep* P = reinterpret_cast<Prep*>(scratch);
  const int64_t nb = a.k / 256;
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* w = a.w + j * a.ldw;
    if (a.m == 1) {  // one row of x: no reuse, each block decoded in registers and applied
      __m512 acc = _mm512_setzero_ps();
      __m256 macc = _mm256_setzero_ps();
      for (int64_t b = 0; b < nb; ++b) {
        stream_ahead(w + bytes * b, bytes);
        Prep p;
        prep<T>(w + bytes * b, &p, ix);
        step<T>(p, b, a, 0, acc, macc);
      }
      a.y[j] = finish<T>(acc, macc);
      continue;
    }
    prefetch_row(a, j, j1);
    for (int64_t b = 0; b < nb; ++b) prep<T>(w + bytes * b, P + b, ix);
    for (int64_t i0 = 0; i0 < a.m; i0 += kRows) {
      switch (a.m - i0 < kRows ? a.m - i0 : kRows) {
        case 1:
          rows<T, 1>(P, nb, a, i0, j);
          break;
        case 2:
          rows<T, 2>(P, nb, a, i0, j);
          break;
        case 3:
          rows<T, 3>(P, nb, a, i0, j);
          break;
        default:
          rows<T, 4>(P, nb, a, i0, j);
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
