// Block pieces shared by the AVX2 and AVX-512 kernels of q2_K, q3_K and iq4_xs: scale fields
// unpacked with SSE/AVX2 operations, the same values as ggml_blocks.hpp's accessors. Include
// only from files compiled with at least -mavx2 -mf16c; the functions have internal linkage,
// so each file keeps its own copy for its instruction set.
#pragma once

#include <immintrin.h>

#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu::qint::lowbit_simd {

// A binary16 field to f32, exactly (F16C).
static inline float f16(const uint8_t* p) {
  return _cvtsh_ss(ggml::load_u16(p));
}

// q3_K: the 16 signed scales (ggml::q3_k_scale, j = 0..15) as int8 lanes j, from the 12
// bytes at s. Low nibbles: byte j & 7, shifted by 4 for j >= 8; two high bits: byte 8 + j % 4,
// shifted by 2 (j / 4) (32-bit lanes j / 4 of a broadcast word, masked to each byte's own
// two bits).
static inline __m128i q3_k_scales(const uint8_t* s) {
  const __m128i low4 = _mm_set1_epi8(15);
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s));
  const __m128i lo =
      _mm_unpacklo_epi64(_mm_and_si128(b, low4), _mm_and_si128(_mm_srli_epi16(b, 4), low4));
  const __m128i hi =
      _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(ggml::load_u32(s + 8))),
                                   _mm_setr_epi32(0, 2, 4, 6)),
                    _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

// iq4_xs: the 8 signed scales of block b (ggml::iq4_xs_scale, j = 0..7) as int16 lanes j.
static inline __m128i iq4_xs_scales(const uint8_t* b) {
  const __m256i lo =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(ggml::load_u32(b + 4))),
                                         _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                       _mm256_set1_epi32(15));
  const __m256i hi =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(ggml::load_u16(b + 2)),
                                         _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                       _mm256_set1_epi32(3));
  const __m256i s =
      _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
  return _mm_packs_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

// The 16 iq4 levels (ggml::iq4_level) as int8 lanes, for byte shuffles.
static inline __m128i iq4_levels() {
  alignas(16) int8_t levels[16];
  for (unsigned i = 0; i < 16; ++i) levels[i] = static_cast<int8_t>(ggml::iq4_level(i));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(levels));
}

}  // namespace specd::cpu::qint::lowbit_simd
