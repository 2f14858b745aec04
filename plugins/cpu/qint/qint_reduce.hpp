// qint.hpp's reduceN (for w = N/2, .., 1: a[l] += a[l + w]), over an array for the generic
// kernels and over SIMD lanes for the AVX2 and AVX-512 ones. Each file is compiled with its
// own ISA flags, so the functions have internal linkage: no translation unit may end up
// calling another's AVX-512 copy.
#pragma once

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace specd::cpu::qint {
namespace {

[[maybe_unused]] float reduce(float* a, int n) {
  for (int w = n / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) a[l] += a[l + w];
  return a[0];
}

#if defined(__AVX2__)

[[maybe_unused]] float reduce8(__m256 v) {  // lanes l + 4, then l + 2, then l + 1
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

[[maybe_unused]] float reduce16(__m256 lo, __m256 hi) {  // lanes l + 8 first
  return reduce8(_mm256_add_ps(lo, hi));
}

#endif

#if defined(__AVX512F__)
[[maybe_unused]] float reduce16(__m512 v) {  // lanes l + 8 first
  return reduce8(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}
#endif

}  // namespace
}  // namespace specd::cpu::qint
