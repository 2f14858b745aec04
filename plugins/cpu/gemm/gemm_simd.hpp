// The small-m GEMM driver shared by the SIMD kernels (gemm_avx2.cpp, gemm_avx512.cpp). Each
// kernel describes its instruction set as a struct V and calls gemm_cols<V>:
//   Reg, kLanes                 the vector register and its number of floats
//   Tail, tail(n)               what loading the last n < kLanes values needs (a count, a mask)
//   zero(), fmadd(a, b, acc)    acc + a * b, fused
//   reduce(v)                   the lanes' sum, in a fixed order
//   load_x(p), load_x_tail(p, t), store(p, v)
//   load_w<DT>(row, kk), load_w_tail<DT>(row, kk, t)   weights from element kk, as f32
//   max_nr(mr)                  the widest tile whose registers fit, for mr rows of x
//   decode_row(dtype, row, k, out)  decodes a block-type row itself (bit-identical to
//                               ggml_blocks.hpp) and returns true, or returns false
// Element (i, j) = reduce(acc), acc = fma(x[i, chunk], w[j, chunk], acc) over chunks of
// kLanes in increasing k, the tail zero-padded. The tile shape only decides which elements
// share a weight load, never an element's arithmetic: that is what makes the kernel batch
// invariant. Everything here is a template over V, and each V lives in its kernel's
// anonymous namespace, so every instantiation is compiled with that kernel's -m flags and
// none can be merged into another (hence no C++ library headers either).
#pragma once

#include "gemm/gemm_kernels.hpp"
#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu::simd {

// kBlock: any other block-quantized dtype. Its rows are always decoded to the f32 panel by
// ggml_blocks.hpp (exactly, the bits of llama.cpp's dequantization) and the tiles run over
// the panel, so an element's FMA sequence is the f32 one whatever m.
enum { kF32 = 0, kF16 = 1, kBF16 = 2, kQ8 = 3, kBlock = 4 };

// y[0:MR, 0:NR] for rows x[0:MR] and weight rows w[0:NR]. `ahead` (f32, f16 and bf16 rows):
// NR weight rows whose lines are asked for into L2 as the tile reads the same offsets of its
// own, or null. Decoding the 1.5 B constructed model's f16 weights (one row, 2 threads, Xeon 6
// VM), a token took 0.93x as long with the next 8 rows asked for (AVX2: 0.92x).
template <class V, int DT, int MR, int NR>
void tile(const float* x, int64_t ldx, const uint8_t* w, int64_t ldw, float* y, int64_t ldy,
          int64_t k, const uint8_t* ahead = nullptr) {
  using Reg = typename V::Reg;
  constexpr int64_t kBytes = DT == kF32 ? 4 : 2;  // of a value, for the rows ahead
  Reg acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = V::zero();
  int64_t kk = 0;
  for (; kk + V::kLanes <= k; kk += V::kLanes) {
    if constexpr (DT == kF32 || DT == kF16 || DT == kBF16)
      if (ahead && kk * kBytes % 64 == 0)
        for (int c = 0; c < NR; ++c) __builtin_prefetch(ahead + c * ldw + kk * kBytes, 0, 2);
    Reg wv[NR];
    for (int c = 0; c < NR; ++c) wv[c] = V::template load_w<DT>(w + c * ldw, kk);
    for (int r = 0; r < MR; ++r) {
      const Reg xv = V::load_x(x + r * ldx + kk);
      for (int c = 0; c < NR; ++c) acc[r][c] = V::fmadd(xv, wv[c], acc[r][c]);
    }
  }
  if constexpr (DT != kQ8) {  // q8_0 rows are whole 32-value blocks: no tail
    if (kk < k) {
      const typename V::Tail t = V::tail(static_cast<int>(k - kk));
      Reg wv[NR];
      for (int c = 0; c < NR; ++c) wv[c] = V::template load_w_tail<DT>(w + c * ldw, kk, t);
      for (int r = 0; r < MR; ++r) {
        const Reg xv = V::load_x_tail(x + r * ldx + kk, t);
        for (int c = 0; c < NR; ++c) acc[r][c] = V::fmadd(xv, wv[c], acc[r][c]);
      }
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) y[r * ldy + c] = V::reduce(acc[r][c]);
}

// tile<V, DT, MR, nr> for a run-time 1 <= nr <= NR.
template <class V, int DT, int MR, int NR>
void tile_of_width(int nr, const float* x, int64_t ldx, const uint8_t* w, int64_t ldw, float* y,
                   int64_t ldy, int64_t k, const uint8_t* ahead = nullptr) {
  if (nr == NR) return tile<V, DT, MR, NR>(x, ldx, w, ldw, y, ldy, k, ahead);
  if constexpr (NR > 1) tile_of_width<V, DT, MR, NR - 1>(nr, x, ldx, w, ldw, y, ldy, k, ahead);
}

// MR rows of x against nr weight rows, in tiles of at most max_nr(MR) weight rows.
template <class V, int DT, int MR>
void tile_cols(int nr, const float* x, int64_t ldx, const uint8_t* w, int64_t ldw, float* y,
               int64_t ldy, int64_t k, const uint8_t* ahead = nullptr) {
  constexpr int kMaxNr = V::max_nr(MR);
  while (nr > 0) {
    const int c = nr < kMaxNr ? nr : kMaxNr;
    tile_of_width<V, DT, MR, kMaxNr>(c, x, ldx, w, ldw, y, ldy, k, ahead);
    if (ahead) ahead += c * ldw;
    w += c * ldw;
    y += c;
    nr -= c;
  }
}

// tile_cols<V, DT, mr> for a run-time 1 <= mr <= MR.
template <class V, int DT, int MR>
void row_block(int mr, int nr, const float* x, int64_t ldx, const uint8_t* w, int64_t ldw, float* y,
               int64_t ldy, int64_t k) {
  if (mr == MR) return tile_cols<V, DT, MR>(nr, x, ldx, w, ldw, y, ldy, k);
  if constexpr (MR > 1) row_block<V, DT, MR - 1>(mr, nr, x, ldx, w, ldw, y, ldy, k);
}

// Decodes rows [0, nr) of w (k values each) into an f32 panel, exactly as load_w does, so
// that tiles over the panel compute the same bits as tiles over the raw weights.
template <class V, int DT>
void decode_panel(const uint8_t* w, int64_t ldw, int nr, int64_t k, float* panel) {
  for (int c = 0; c < nr; ++c) {
    int64_t kk = 0;
    for (; kk + V::kLanes <= k; kk += V::kLanes)
      V::store(panel + c * k + kk, V::template load_w<DT>(w + c * ldw, kk));
    if constexpr (DT != kQ8) {
      if (kk < k) {
        float tail[V::kLanes];
        V::store(tail,
                 V::template load_w_tail<DT>(w + c * ldw, kk, V::tail(static_cast<int>(k - kk))));
        for (int64_t i = kk; i < k; ++i) panel[c * k + i] = tail[i - kk];
      }
    }
  }
}

template <class V, int DT>
void cols(const GemmArgs& a, int64_t j0, int64_t j1, float* panel) {
  constexpr int kRows = 4;                // rows of x per tile
  for (int64_t j = j0; j < j1; j += 8) {  // weights outer: 8 rows of w, all m rows of x
    const int nr = static_cast<int>(j1 - j < 8 ? j1 - j : 8);
    const uint8_t* w = a.w + j * a.ldw;
    int64_t ldw = a.ldw;
    bool decoded = false;
    if constexpr (DT == kBlock) {
      for (int c = 0; c < nr; ++c)
        if (!V::decode_row(a.dtype, w + c * a.ldw, a.k, panel + c * a.k))
          ggml::dequantize_row(a.dtype, w + c * a.ldw, a.k, panel + c * a.k);
      w = reinterpret_cast<const uint8_t*>(panel);
      ldw = a.k * 4;
      decoded = true;
    } else if (DT == kQ8 && a.m > kRows && panel) {  // several row blocks: decode q8_0 once
      decode_panel<V, DT>(w, a.ldw, nr, a.k, panel);
      w = reinterpret_cast<const uint8_t*>(panel);
      ldw = a.k * 4;
      decoded = true;
    }
    if (a.m == 1 && !decoded) {  // decoding: the next 8 weight rows asked for meanwhile
      const uint8_t* ahead = j + 16 <= j1 ? w + 8 * a.ldw : nullptr;
      tile_cols<V, DT, 1>(nr, a.x, a.ldx, w, ldw, a.y + j, a.ldy, a.k, ahead);
      continue;
    }
    for (int64_t i = 0; i < a.m; i += kRows) {
      const float* x = a.x + i * a.ldx;
      float* y = a.y + i * a.ldy + j;
      const int mr = static_cast<int>(a.m - i < kRows ? a.m - i : kRows);
      if constexpr (DT == kBlock) {
        row_block<V, kF32, kRows>(mr, nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
      } else {
        if (decoded)
          row_block<V, kF32, kRows>(mr, nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
        else
          row_block<V, DT, kRows>(mr, nr, x, a.ldx, w, ldw, y, a.ldy, a.k);
      }
    }
  }
}

// y[:, j0:j1] for all m rows (gemm_kernels.hpp).
template <class V>
void gemm_cols(const GemmArgs& a, int64_t j0, int64_t j1, float* panel) {
  switch (a.dtype) {
    case SPECD_DTYPE_F32:
      return cols<V, kF32>(a, j0, j1, panel);
    case SPECD_DTYPE_F16:
      return cols<V, kF16>(a, j0, j1, panel);
    case SPECD_DTYPE_BF16:
      return cols<V, kBF16>(a, j0, j1, panel);
    case SPECD_DTYPE_Q8_0:
      return cols<V, kQ8>(a, j0, j1, panel);
    default:
      return cols<V, kBlock>(a, j0, j1, panel);
  }
}

}  // namespace specd::cpu::simd
