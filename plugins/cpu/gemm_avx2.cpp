// AVX2 + FMA small-m GEMM kernel (compiled with -mavx2 -mfma -mf16c; called only after
// avx2_available()). Same scheme as the AVX-512 kernel with 8 lanes: element (i, j) =
// reduce(acc), acc = fma(x[i, chunk], w[j, chunk], acc) over chunks of 8 in increasing k, the
// tail zero-padded; the tile shape never changes an element's arithmetic.
#include <immintrin.h>

#include "gemm_kernels.hpp"

namespace specd::cpu {
namespace {

enum { kF32 = 0, kF16 = 1, kBF16 = 2, kQ8 = 3 };

template <int DT>
inline __m256 load_w(const uint8_t* row, int64_t kk) {  // 8 weights at element kk, as f32
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

// The last k % 8 values, zero-padded to 8 lanes.
template <int DT>
inline __m256 load_w_tail(const uint8_t* row, int64_t kk, int n) {
  alignas(32) uint8_t buf[32] = {};
  const int elem = DT == kF32 ? 4 : 2;
  __builtin_memcpy(buf, row + elem * kk, static_cast<unsigned>(n * elem));
  return load_w<DT>(buf, 0);
}

inline __m256 load_x_tail(const float* x, int n) {
  alignas(32) float buf[8] = {};
  __builtin_memcpy(buf, x, static_cast<unsigned>(n * 4));
  return _mm256_load_ps(buf);
}

inline float reduce(__m256 v) {  // fixed order: halves, then pairs
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

template <int DT, int MR, int NR>
void tile(const float* x, int64_t ldx, const uint8_t* w, int64_t ldw, float* y, int64_t ldy,
          int64_t k) {
  __m256 acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = _mm256_setzero_ps();
  int64_t kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    __m256 wv[NR];
    for (int c = 0; c < NR; ++c) wv[c] = load_w<DT>(w + c * ldw, kk);
    for (int r = 0; r < MR; ++r) {
      const __m256 xv = _mm256_loadu_ps(x + r * ldx + kk);
      for (int c = 0; c < NR; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
    }
  }
  if constexpr (DT != kQ8) {
    if (kk < k) {
      const int n = static_cast<int>(k - kk);
      __m256 wv[NR];
      for (int c = 0; c < NR; ++c) wv[c] = load_w_tail<DT>(w + c * ldw, kk, n);
      for (int r = 0; r < MR; ++r) {
        const __m256 xv = load_x_tail(x + r * ldx + kk, n);
        for (int c = 0; c < NR; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
      }
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) y[r * ldy + c] = reduce(acc[r][c]);
}

template <int DT, int MR>
void tile_cols(int nr, const float* x, int64_t ldx, const uint8_t* w, int64_t ldw, float* y,
               int64_t ldy, int64_t k) {
  constexpr int kMaxNr = MR <= 2 ? 4 : 3;  // MR x NR accumulators + NR weights + 1 row <= 16
  while (nr > 0) {
    const int c = nr < kMaxNr ? nr : kMaxNr;
    if constexpr (kMaxNr == 4) {
      switch (c) {
        case 4:
          tile<DT, MR, 4>(x, ldx, w, ldw, y, ldy, k);
          break;
        case 3:
          tile<DT, MR, 3>(x, ldx, w, ldw, y, ldy, k);
          break;
        case 2:
          tile<DT, MR, 2>(x, ldx, w, ldw, y, ldy, k);
          break;
        default:
          tile<DT, MR, 1>(x, ldx, w, ldw, y, ldy, k);
          break;
      }
    } else {
      switch (c) {
        case 3:
          tile<DT, MR, 3>(x, ldx, w, ldw, y, ldy, k);
          break;
        case 2:
          tile<DT, MR, 2>(x, ldx, w, ldw, y, ldy, k);
          break;
        default:
          tile<DT, MR, 1>(x, ldx, w, ldw, y, ldy, k);
          break;
      }
    }
    w += c * ldw;
    y += c;
    nr -= c;
  }
}

// Decodes rows [0, nr) of w (k values each) into an f32 panel, exactly as load_w does, so
// that tiles over the panel compute the same bits as tiles over the raw weights.
template <int DT>
void decode_panel(const uint8_t* w, int64_t ldw, int nr, int64_t k, float* panel) {
  for (int c = 0; c < nr; ++c) {
    int64_t kk = 0;
    for (; kk + 8 <= k; kk += 8) _mm256_storeu_ps(panel + c * k + kk, load_w<DT>(w + c * ldw, kk));
    if constexpr (DT != kQ8) {
      if (kk < k) {
        float tail[8];
        _mm256_storeu_ps(tail, load_w_tail<DT>(w + c * ldw, kk, static_cast<int>(k - kk)));
        for (int64_t i = kk; i < k; ++i) panel[c * k + i] = tail[i - kk];
      }
    }
  }
}

template <int DT>
void cols(const GemmArgs& a, int64_t j0, int64_t j1, float* panel) {
  for (int64_t j = j0; j < j1; j += 8) {  // weights outer: 8 rows of w, all m rows of x
    const int nr = static_cast<int>(j1 - j < 8 ? j1 - j : 8);
    const uint8_t* w = a.w + j * a.ldw;
    int64_t ldw = a.ldw;
    bool decoded = false;
    if (DT == kQ8 && a.m > 4 && panel) {  // several row blocks: decode q8_0 once
      decode_panel<DT>(w, a.ldw, nr, a.k, panel);
      w = reinterpret_cast<const uint8_t*>(panel);
      ldw = a.k * 4;
      decoded = true;
    }
    for (int64_t i = 0; i < a.m; i += 4) {
      const float* x = a.x + i * a.ldx;
      float* y = a.y + i * a.ldy + j;
      const int64_t mr = a.m - i < 4 ? a.m - i : 4;
      if (decoded) {
        switch (mr) {
          case 4:
            tile_cols<kF32, 4>(nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
            break;
          case 3:
            tile_cols<kF32, 3>(nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
            break;
          case 2:
            tile_cols<kF32, 2>(nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
            break;
          default:
            tile_cols<kF32, 1>(nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
            break;
        }
        continue;
      }
      switch (mr) {
        case 4:
          tile_cols<DT, 4>(nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
          break;
        case 3:
          tile_cols<DT, 3>(nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
          break;
        case 2:
          tile_cols<DT, 2>(nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
          break;
        default:
          tile_cols<DT, 1>(nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
          break;
      }
    }
  }
}

}  // namespace

void gemm_cols_avx2(const GemmArgs& a, int64_t j0, int64_t j1, float* panel) {
  switch (a.dtype) {
    case SPECD_DTYPE_F32:
      return cols<kF32>(a, j0, j1, panel);
    case SPECD_DTYPE_F16:
      return cols<kF16>(a, j0, j1, panel);
    case SPECD_DTYPE_BF16:
      return cols<kBF16>(a, j0, j1, panel);
    default:
      return cols<kQ8>(a, j0, j1, panel);
  }
}

}  // namespace specd::cpu
