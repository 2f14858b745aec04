// AVX-512 small-m GEMM kernel (compiled with -mavx512f/bw/vl/dq -mfma -mf16c; called only
// after avx512_available()): 16 lanes, masked tails, over the shared driver in gemm_simd.hpp.
#include <immintrin.h>

#include "gemm/decode_avx512.hpp"
#include "gemm/gemm_simd.hpp"

namespace specd::cpu {
namespace {

using simd::kBF16;
using simd::kF16;
using simd::kF32;

struct Avx512 {
  using Reg = __m512;
  using Tail = __mmask16;  // the lanes still in range
  static constexpr int kLanes = 16;
  // MR x NR accumulators + NR weights + 1 row of x within the 32 zmm registers.
  static constexpr int max_nr(int mr) { return mr <= 2 ? 8 : 4; }

  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg fmadd(Reg a, Reg b, Reg acc) { return _mm512_fmadd_ps(a, b, acc); }
  static float reduce(Reg v) { return _mm512_reduce_add_ps(v); }
  static Tail tail(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static Reg load_x(const float* x) { return _mm512_loadu_ps(x); }
  static Reg load_x_tail(const float* x, Tail mask) { return _mm512_maskz_loadu_ps(mask, x); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static bool decode_row(uint32_t dtype, const uint8_t* row, int64_t k, float* out) {
    return avx512::decode_row(dtype, row, k, out);  // q4_K, q6_K
  }

  template <int DT>
  static Reg load_w(const uint8_t* row, int64_t kk) {
    if constexpr (DT == kF32) {
      return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + kk);
    } else if constexpr (DT == kF16) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * kk)));
    } else if constexpr (DT == kBF16) {
      const __m512i h =
          _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * kk)));
      return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
    } else {
      const uint8_t* blk = row + (kk >> 5) * 34;
      uint16_t dh;
      __builtin_memcpy(&dh, blk, 2);
      const float d = _cvtsh_ss(dh);
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + (kk & 31)));
      // d * q is exact in f32 (11-bit by 8-bit significands).
      return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(d));
    }
  }
  template <int DT>
  static Reg load_w_tail(const uint8_t* row, int64_t kk, Tail mask) {  // masked-off lanes are 0
    if constexpr (DT == kF32) {
      return _mm512_maskz_loadu_ps(mask, reinterpret_cast<const float*>(row) + kk);
    } else if constexpr (DT == kF16) {
      return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, row + 2 * kk));
    } else {
      const __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, row + 2 * kk));
      return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
    }
  }
};

}  // namespace

void gemm_cols_avx512(const GemmArgs& a, int64_t j0, int64_t j1, float* panel) {
  simd::gemm_cols<Avx512>(a, j0, j1, panel);
}

}  // namespace specd::cpu
