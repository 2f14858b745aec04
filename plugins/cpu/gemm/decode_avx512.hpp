// AVX-512 decoding of q4_K and q6_K rows for the AVX-512 GEMM kernel (included only by
// gemm_avx512.cpp, compiled for AVX-512). The same f32 operations as ggml_blocks.hpp's
// dequantize_block, sixteen lanes at a time: q exactly to f32, (d·sc)·q, then − dmin·m,
// unfused, so the bits are equal (tests/backend checks every dtype against the f32 path).
#pragma once

#include <immintrin.h>
#include <stdint.h>

#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu::avx512 {

// 16 unsigned bytes to 16 floats.
static inline __m512 u8_to_ps(__m128i v) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
}

static inline void q4_k_block(const uint8_t* b, float* out) {
  const float d = ggml::load_f16(b), dmin = ggml::load_f16(b + 2);
  const __m256i low4 = _mm256_set1_epi8(15);
  for (unsigned p = 0; p < 4; ++p) {  // bytes 16 + 32p: sub-block 2p (low), 2p + 1 (high)
    unsigned sc0, m0, sc1, m1;
    ggml::k_scale_min(b + 4, 2 * p, &sc0, &m0);
    ggml::k_scale_min(b + 4, 2 * p + 1, &sc1, &m1);
    const __m512 dl0 = _mm512_set1_ps(d * static_cast<float>(sc0));
    const __m512 ml0 = _mm512_set1_ps(dmin * static_cast<float>(m0));
    const __m512 dl1 = _mm512_set1_ps(d * static_cast<float>(sc1));
    const __m512 ml1 = _mm512_set1_ps(dmin * static_cast<float>(m1));
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 + 32 * p));
    const __m256i lo = _mm256_and_si256(q, low4);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
    float* o = out + 64 * p;
    _mm512_storeu_ps(o,
                     _mm512_sub_ps(_mm512_mul_ps(dl0, u8_to_ps(_mm256_castsi256_si128(lo))), ml0));
    _mm512_storeu_ps(
        o + 16, _mm512_sub_ps(_mm512_mul_ps(dl0, u8_to_ps(_mm256_extracti128_si256(lo, 1))), ml0));
    _mm512_storeu_ps(o + 32,
                     _mm512_sub_ps(_mm512_mul_ps(dl1, u8_to_ps(_mm256_castsi256_si128(hi))), ml1));
    _mm512_storeu_ps(
        o + 48, _mm512_sub_ps(_mm512_mul_ps(dl1, u8_to_ps(_mm256_extracti128_si256(hi, 1))), ml1));
  }
}

static inline void q6_k_block(const uint8_t* b, float* out) {
  const float d = ggml::load_f16(b + 208);
  const __m256i low4 = _mm256_set1_epi8(15), low2 = _mm256_set1_epi8(3);
  const __m512i offset = _mm512_set1_epi32(32);
  for (unsigned c = 0; c < 2; ++c) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * c));
    for (unsigned s = 0; s < 4; ++s) {  // elements 128c + 32s + l, l < 32
      __m256i l = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * c + 32 * (s & 1)));
      if (s >> 1) l = _mm256_srli_epi16(l, 4);
      l = _mm256_and_si256(l, low4);
      const __m256i hs = _mm256_and_si256(_mm256_srl_epi16(h, _mm_cvtsi32_si128(2 * s)), low2);
      const __m256i q = _mm256_or_si256(l, _mm256_slli_epi16(hs, 4));
      const unsigned j = 8 * c + 2 * s;  // scales of elements l < 16 and l >= 16
      const __m512 dl0 = _mm512_set1_ps(d * static_cast<float>(static_cast<int8_t>(b[192 + j])));
      const __m512 dl1 =
          _mm512_set1_ps(d * static_cast<float>(static_cast<int8_t>(b[192 + j + 1])));
      const __m512 q0 = _mm512_cvtepi32_ps(
          _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(q)), offset));
      const __m512 q1 = _mm512_cvtepi32_ps(
          _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(q, 1)), offset));
      float* o = out + 128 * c + 32 * s;
      _mm512_storeu_ps(o, _mm512_mul_ps(dl0, q0));
      _mm512_storeu_ps(o + 16, _mm512_mul_ps(dl1, q1));
    }
  }
}

// A row of `k` values of q4_K or q6_K to f32; false (nothing written) for other dtypes.
static inline bool decode_row(uint32_t dtype, const uint8_t* row, int64_t k, float* out) {
  if (dtype == ggml::kQ4_K) {
    for (int64_t i = 0; i < k / 256; ++i) q4_k_block(row + 144 * i, out + 256 * i);
    return true;
  }
  if (dtype == ggml::kQ6_K) {
    for (int64_t i = 0; i < k / 256; ++i) q6_k_block(row + 210 * i, out + 256 * i);
    return true;
  }
  return false;
}

}  // namespace specd::cpu::avx512
