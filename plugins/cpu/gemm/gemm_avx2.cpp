// AVX2 + FMA small-m GEMM kernel (compiled with -mavx2 -mfma -mf16c; called only after
// avx2_available()): 8 lanes over the shared driver in gemm_simd.hpp.
#include <immintrin.h>

#include "gemm/gemm_simd.hpp"

namespace specd::cpu {
namespace {

using simd::kBF16;
using simd::kF16;
using simd::kF32;

struct Avx2 {
  using Reg = __m256;
  using Tail = int;  // how many values are left
  static constexpr int kLanes = 8;
  // MR x NR accumulators + NR weights + 1 row of x within the 16 ymm registers.
  static constexpr int max_nr(int mr) { return mr <= 2 ? 4 : 3; }

  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg fmadd(Reg a, Reg b, Reg acc) { return _mm256_fmadd_ps(a, b, acc); }
  static float reduce(Reg v) {  // fixed order: halves, then pairs
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static Tail tail(int n) { return n; }
  static Reg load_x(const float* x) { return _mm256_loadu_ps(x); }
  static Reg load_x_tail(const float* x, Tail n) {  // zero-padded to 8 lanes
    alignas(32) float buf[8] = {};
    __builtin_memcpy(buf, x, static_cast<unsigned>(n * 4));
    return _mm256_load_ps(buf);
  }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static bool decode_row(uint32_t, const uint8_t*, int64_t, float*) { return false; }

  template <int DT>
  static Reg load_w(const uint8_t* row, int64_t kk) {
    if constexpr (DT == kF32) {
      return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + kk);
    } else if constexpr (DT == kF16) {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * kk)));
    } else if constexpr (DT == kBF16) {
      const __m256i h =
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * kk)));
      return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
    } else {
      const uint8_t* blk = row + (kk >> 5) * 34;
      uint16_t dh;
      __builtin_memcpy(&dh, blk, 2);
      const float d = _cvtsh_ss(dh);
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + (kk & 31)));
      // d * q is exact in f32 (11-bit by 8-bit significands).
      return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_set1_ps(d));
    }
  }
  template <int DT>
  static Reg load_w_tail(const uint8_t* row, int64_t kk, Tail n) {  // zero-padded
    alignas(32) uint8_t buf[32] = {};
    const int elem = DT == kF32 ? 4 : 2;
    __builtin_memcpy(buf, row + elem * kk, static_cast<unsigned>(n * elem));
    return load_w<DT>(buf, 0);
  }
};

}  // namespace

void gemm_cols_avx2(const GemmArgs& a, int64_t j0, int64_t j1, float* panel) {
  simd::gemm_cols<Avx2>(a, j0, j1, panel);
}

}  // namespace specd::cpu
