// AVX-512 small-m GEMM kernel (compiled with -mavx512f/bw/vl/dq -mfma -mf16c; called only
// after avx512_available()). Output element (i, j) = reduce(acc), acc = 16 lanes, and for each
// chunk of 16 k-values acc = fma(x[i, chunk], w[j, chunk], acc) in increasing k. The tile
// shape only decides which elements share a weight load, never an element's arithmetic.
#include <immintrin.h>

#include "gemm_kernels.hpp"

namespace specd::cpu {
namespace {

enum { kF32 = 0, kF16 = 1, kBF16 = 2, kQ8 = 3 };

template <int DT>
inline __m512 load_w(const uint8_t* row, int64_t kk) {  // 16 weights at element kk, as f32
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
inline __m512 load_w_tail(const uint8_t* row, int64_t kk, __mmask16 mask) {
  if constexpr (DT == kF32) {
    return _mm512_maskz_loadu_ps(mask, reinterpret_cast<const float*>(row) + kk);
  } else if constexpr (DT == kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, row + 2 * kk));
  } else {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, row + 2 * kk));
    return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
  }
}

// y[0:MR, 0:NR] for rows x[0:MR] and weight rows w[0:NR].
template <int DT, int MR, int NR>
void tile(const float* x, int64_t ldx, const uint8_t* w, int64_t ldw, float* y, int64_t ldy,
          int64_t k) {
  __m512 acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = _mm512_setzero_ps();
  int64_t kk = 0;
  for (; kk + 16 <= k; kk += 16) {
    __m512 wv[NR];
    for (int c = 0; c < NR; ++c) wv[c] = load_w<DT>(w + c * ldw, kk);
    for (int r = 0; r < MR; ++r) {
      const __m512 xv = _mm512_loadu_ps(x + r * ldx + kk);
      for (int c = 0; c < NR; ++c) acc[r][c] = _mm512_fmadd_ps(xv, wv[c], acc[r][c]);
    }
  }
  if constexpr (DT != kQ8) {
    if (kk < k) {
      const __mmask16 mask = static_cast<__mmask16>((1u << (k - kk)) - 1u);
      __m512 wv[NR];
      for (int c = 0; c < NR; ++c) wv[c] = load_w_tail<DT>(w + c * ldw, kk, mask);
      for (int r = 0; r < MR; ++r) {
        const __m512 xv = _mm512_maskz_loadu_ps(mask, x + r * ldx + kk);
        for (int c = 0; c < NR; ++c) acc[r][c] = _mm512_fmadd_ps(xv, wv[c], acc[r][c]);
      }
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) y[r * ldy + c] = _mm512_reduce_add_ps(acc[r][c]);
}

template <int DT, int MR>
void tile_cols(int nr, const float* x, int64_t ldx, const uint8_t* w, int64_t ldw, float* y,
               int64_t ldy, int64_t k) {
  if constexpr (MR <= 2) {
    switch (nr) {
      case 8:
        return tile<DT, MR, 8>(x, ldx, w, ldw, y, ldy, k);
      case 7:
        return tile<DT, MR, 7>(x, ldx, w, ldw, y, ldy, k);
      case 6:
        return tile<DT, MR, 6>(x, ldx, w, ldw, y, ldy, k);
      case 5:
        return tile<DT, MR, 5>(x, ldx, w, ldw, y, ldy, k);
      case 4:
        return tile<DT, MR, 4>(x, ldx, w, ldw, y, ldy, k);
      case 3:
        return tile<DT, MR, 3>(x, ldx, w, ldw, y, ldy, k);
      case 2:
        return tile<DT, MR, 2>(x, ldx, w, ldw, y, ldy, k);
      default:
        return tile<DT, MR, 1>(x, ldx, w, ldw, y, ldy, k);
    }
  } else {
    while (nr > 0) {
      const int c = nr < 4 ? nr : 4;
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
      w += c * ldw;
      y += c;
      nr -= c;
    }
  }
}

// Decodes rows [0, nr) of w (k values each) into an f32 panel, exactly as load_w does, so
// that tiles over the panel compute the same bits as tiles over the raw weights.
template <int DT>
void decode_panel(const uint8_t* w, int64_t ldw, int nr, int64_t k, float* panel) {
  for (int c = 0; c < nr; ++c) {
    int64_t kk = 0;
    for (; kk + 16 <= k; kk += 16)
      _mm512_storeu_ps(panel + c * k + kk, load_w<DT>(w + c * ldw, kk));
    if constexpr (DT != kQ8) {
      if (kk < k) {
        float tail[16];
        _mm512_storeu_ps(
            tail, load_w_tail<DT>(w + c * ldw, kk, static_cast<__mmask16>((1u << (k - kk)) - 1u)));
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

void gemm_cols_avx512(const GemmArgs& a, int64_t j0, int64_t j1, float* panel) {
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
