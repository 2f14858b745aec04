#include "ops/kv_rows.hpp"

#include <immintrin.h>

#include "gemm/gemm_kernels.hpp"
#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu {
namespace {

namespace ggml = specd::ggml;

// (GCC 12 warns about _mm256_undefined_pd() inside its own intrinsics headers.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

[[gnu::target("avx512f")]] void encode_f16_avx512(const float* src, int64_t n, uint16_t* dst) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(dst + i),
        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) dst[i] = ggml::f32_to_f16(src[i]);
}

[[gnu::target("avx512f")]] void decode_f16_avx512(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(
        dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  for (; i < n; ++i) dst[i] = ggml::f16_to_f32(src[i]);
}

[[gnu::target("avx512f,avx512bw")]] void decode_q8_0_avx512(const uint8_t* src, int64_t n,
                                                            float* dst) {
  for (int64_t b = 0; b < n / 32; ++b, src += 34) {
    const __m512 d = _mm512_set1_ps(ggml::load_f16(src));
    for (int h = 0; h < 2; ++h) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 + 16 * h));
      _mm512_storeu_ps(dst + 32 * b + 16 * h,
                       _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q))));
    }
  }
}

#pragma GCC diagnostic pop

[[gnu::target("avx2,f16c")]] void encode_f16_avx2(const float* src, int64_t n, uint16_t* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) dst[i] = ggml::f32_to_f16(src[i]);
}

[[gnu::target("avx2,f16c")]] void decode_f16_avx2(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = ggml::f16_to_f32(src[i]);
}

}  // namespace

int64_t kv_byte_offset(specd_dtype dtype, int64_t col) {
  if (dtype == SPECD_DTYPE_F16) return col * 2;
  if (dtype == SPECD_DTYPE_Q8_0) return col / 32 * 34;
  return col * 4;
}

void encode_kv_row(const float* src, int64_t n, specd_dtype dtype, uint8_t* dst) {
  if (dtype == SPECD_DTYPE_F16) {
    auto* h = reinterpret_cast<uint16_t*>(dst);
    if (avx512_available()) return encode_f16_avx512(src, n, h);
    if (avx2_available()) return encode_f16_avx2(src, n, h);
    for (int64_t i = 0; i < n; ++i) h[i] = ggml::f32_to_f16(src[i]);
    return;
  }
  for (int64_t b = 0; b < n / 32; ++b) ggml::quantize_q8_0_block(src + 32 * b, dst + 34 * b);
}

void decode_kv_row(const uint8_t* src, int64_t n, specd_dtype dtype, float* dst) {
  if (dtype == SPECD_DTYPE_F16) {
    const auto* h = reinterpret_cast<const uint16_t*>(src);
    if (avx512_available()) return decode_f16_avx512(h, n, dst);
    if (avx2_available()) return decode_f16_avx2(h, n, dst);
    for (int64_t i = 0; i < n; ++i) dst[i] = ggml::f16_to_f32(h[i]);
    return;
  }
  if (avx512_available()) return decode_q8_0_avx512(src, n, dst);
  for (int64_t b = 0; b < n / 32; ++b, src += 34) {
    const float d = ggml::load_f16(src);
    for (int j = 0; j < 32; ++j)
      dst[32 * b + j] = d * static_cast<float>(static_cast<int8_t>(src[2 + j]));
  }
}

}  // namespace specd::cpu
