// exp in f32 as one fixed sequence of IEEE operations (no table, no fused multiply-add: the
// plugin, and any file including this one, builds with -ffp-contract=off), written once as a scalar
// definition (exp_ref) and again for 8 lanes (AVX2) and 16 lanes (AVX-512): every element gets
// exp_ref's bits, so a row's results never depend on which function, lane or batch computed it.
//
// The definition, for x not NaN (NaN gives x):
//   c = min(max(x, -104), 89)            below: 0 after rounding, above: +inf
//   t = c * log2(e) + 1.5 * 2^23;  n = t - 1.5 * 2^23   (n = c log2 e to the nearest integer)
//   r = (c - n * C1) - n * C2            C1 + C2 = ln 2, C1 with 9 significant bits: n * C1 exact
//   y = ((p(r) * (r * r)) + r) + 1       p: the degree-5 polynomial of Cephes's expf
//   result = (y * 2^floor(n / 2)) * 2^(n - floor(n / 2))
// The two power-of-two factors keep every intermediate finite and normal from -104 to 89;
// only the last product rounds into subnormals or overflows to +inf. Relative error against
// exp over [-87, 88]: below 2.5e-7 (tests/backend/vexp_test.cpp).
#pragma once

#include <immintrin.h>

#include <bit>
#include <cstdint>

namespace specd::cpu {
namespace vexp {

constexpr float kLo = -104.0f, kHi = 89.0f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
constexpr int32_t kRoundBits = 0x4B400000;
constexpr float kC1 = 0.693359375f, kC2 = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;

inline float pow2(int32_t e) {  // 2^e for -126 <= e <= 127
  return std::bit_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(e + 127) << 23));
}

}  // namespace vexp

inline float exp_ref(float x) {
  using namespace vexp;
  if (x != x) return x;
  float c = x > kLo ? x : kLo;
  c = c < kHi ? c : kHi;
  const float t = c * kLog2e + kRound;
  const float n = t - kRound;
  const int32_t ni = std::bit_cast<int32_t>(t) - kRoundBits;
  float r = c - n * kC1;
  r = r - n * kC2;
  float p = kP0;
  p = p * r + kP1;
  p = p * r + kP2;
  p = p * r + kP3;
  p = p * r + kP4;
  p = p * r + kP5;
  const float y = p * (r * r) + r + 1.0f;
  const int32_t n1 = ni >> 1;  // floor(ni / 2)
  return y * pow2(n1) * pow2(ni - n1);
}

// GCC 12 warns about _mm512_undefined_* inside its own intrinsics headers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

[[gnu::target("avx512f"), gnu::always_inline]] inline __m512 exp16(__m512 x) {
  using namespace vexp;
  const __m512 c =
      _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kLo)), _mm512_set1_ps(kHi));  // x not NaN
  const __m512 t = _mm512_add_ps(_mm512_mul_ps(c, _mm512_set1_ps(kLog2e)), _mm512_set1_ps(kRound));
  const __m512 n = _mm512_sub_ps(t, _mm512_set1_ps(kRound));
  const __m512i ni = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(kRoundBits));
  __m512 r = _mm512_sub_ps(c, _mm512_mul_ps(n, _mm512_set1_ps(kC1)));
  r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(kC2)));
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP1));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP2));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP3));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP4));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP5));
  const __m512 y =
      _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(p, _mm512_mul_ps(r, r)), r), _mm512_set1_ps(1.0f));
  const __m512i n1 = _mm512_srai_epi32(ni, 1);
  const __m512i bias = _mm512_set1_epi32(127);
  const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
  const __m512 s2 =
      _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_sub_epi32(ni, n1), bias), 23));
  const __m512 e = _mm512_mul_ps(_mm512_mul_ps(y, s1), s2);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), e, x);
}

[[gnu::target("avx2"), gnu::always_inline]] inline __m256 exp8(__m256 x) {
  using namespace vexp;
  const __m256 c =
      _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kLo)), _mm256_set1_ps(kHi));  // x not NaN
  const __m256 t = _mm256_add_ps(_mm256_mul_ps(c, _mm256_set1_ps(kLog2e)), _mm256_set1_ps(kRound));
  const __m256 n = _mm256_sub_ps(t, _mm256_set1_ps(kRound));
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(kRoundBits));
  __m256 r = _mm256_sub_ps(c, _mm256_mul_ps(n, _mm256_set1_ps(kC1)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(kC2)));
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kP1));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kP2));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kP3));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kP4));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kP5));
  const __m256 y =
      _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), r), _mm256_set1_ps(1.0f));
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, n1), bias), 23));
  const __m256 e = _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
  return _mm256_blendv_ps(e, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

#pragma GCC diagnostic pop

// out[j] = exp_ref(in[j]) for j < n (in == out allowed), with the widest vectors the CPU
// has; defined in ops.cpp.
void exp_array(const float* in, float* out, int64_t n);

}  // namespace specd::cpu
