// Eight values at a time of a KV cache row's head slice, read in the row's own encoding (f32,
// f16 or q8_0) and decoded in registers exactly as kv_rows.hpp decodes them (a half is an f32;
// a q8_0 value is d·q, one exact product), for the AVX2 attention kernels. Each Row type gives
// the bytes of a head_dim-value slice and load8(row, i): values i .. i + 7 (i a multiple of 8).
//
// Thread rules: pure functions of their arguments.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu {

struct F32Row {
  static constexpr int64_t bytes(int64_t hd) { return 4 * hd; }
  [[gnu::target("avx2,f16c"), gnu::always_inline]] static inline __m256 load8(const uint8_t* row,
                                                                              int64_t i) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  }
};

struct F16Row {
  static constexpr int64_t bytes(int64_t hd) { return 2 * hd; }
  [[gnu::target("avx2,f16c"), gnu::always_inline]] static inline __m256 load8(const uint8_t* row,
                                                                              int64_t i) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
  }
};

struct Q8Row {  // blocks of 34 bytes: an f16 d, then 32 int8 q
  static constexpr int64_t bytes(int64_t hd) { return hd / 32 * 34; }
  [[gnu::target("avx2,f16c"), gnu::always_inline]] static inline __m256 load8(const uint8_t* row,
                                                                              int64_t i) {
    const uint8_t* blk = row + 34 * (i / 32);
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + i % 32));
    return _mm256_mul_ps(_mm256_set1_ps(ggml::load_f16(blk)),
                         _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
  }
};

// Asks for the Bytes bytes of a row from `row` on, into L1 (T0) or L2 (T1).
template <int64_t Bytes, _mm_hint Hint = _MM_HINT_T0>
inline void prefetch(const uint8_t* row) {
  for (int64_t line = 0; line < Bytes; line += 64)
    _mm_prefetch(reinterpret_cast<const char*>(row) + line, Hint);
}

// Rows this far ahead of the one read are asked for into L2 (ops.cpp's kFarRows: past the first
// tokens a layer's cache comes from memory, a head's slice at a time).
constexpr int64_t kFarRowsAvx2 = 64;

}  // namespace specd::cpu
