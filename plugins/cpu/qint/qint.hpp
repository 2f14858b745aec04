// The integer kernel family of the small-m GEMM (m <= 64): activations rounded to 8-bit
// blocks, integer dot products per weight block, then the blocks' f32 terms. A second,
// declared numeric choice beside the exact f32 family (gemm_simd.hpp): faster on
// memory-bound decoding, but a different function of the weights (see ARCHITECTURE.md).
//
// Activations. Each row is quantized on its own (quantize_rows, the same bits whatever m):
//   k-quants (q4_K, q5_K, q6_K): 256-value blocks as llama.cpp's q8_K: amax = max |x|, the value
//     of largest magnitude (first one) `max`, iscale = -127 / max, q = min(127, rint(iscale x)),
//     d = 1 / iscale; a block of zeros gets d = 0, q = 0. Also the 16 sums of 16 q (bsum16).
//   q2_K, q3_K, iq4_xs: the same 256-value blocks as the k-quants (with bsum16).
//   32-value types (q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, mxfp4): amax = max |x|, d = amax / 127, q
//   = clamp(rint(x / d)) in
//     [-127, 127] (x * (1 / d)), d = 0 for a block of zeros. Also the sums of 4 q (sum4).
//
// Products. Output element (i, j) keeps f32 accumulators (lanes, or one for q4_K and q6_K)
// and visits the weight blocks in increasing k; every integer below is exact (int32), every
// f32 step is one rounding (float(): round to nearest even):
//   q4_K  one accumulator acc = 0, then per block b: sc[8], mn[8] the 6-bit scales and mins,
//         isum = sum over e < 256 of sc[e / 32] * q_e * y_e   (q_e the 4-bit quant)
//         msum = sum over g < 8 of mn[g] * (bsum16[2g] + bsum16[2g + 1])
//         dd = d_w * d_y, dm = dmin_w * d_y (f32 products)
//         acc = fma(dd, float(isum), acc), then acc = fma(-dm, float(msum), acc);   y = acc
//         (no lanes: one integer per block, so no kernel's lane layout can show in the bits)
//   q5_K  block b: dd = d_w * d_y (f32 product), q_e the 5-bit quant
//         isum[L] = sum over the e with lane(e) = L of sc[e / 32] * q_e * y_e      (L < 16)
//         lane(e) = 8 e6 + 4 e4 + 2 e5 + e3 (e's bits 6, 4, 5, 3: the lanes a stored-order
//         64-byte load of quants fills, see qint_avx512.cpp)
//         wm[g] = dmin_w * mn[g / 2], ys[g] = d_y * bsum16[g] (g < 16: the 16-value groups;
//         wm is exact, ys one f32 product)
//         acc[L] = fma(dd, float(isum[L]), acc[L]) for L < 16, then
//         acc[g] = fma(-wm[g], ys[g], acc[g]) for g < 16;   y = reduce16(acc)
//   q6_K  one accumulator acc = 0, then per block b: sc[16] the int8 scales (byte 192), d_w
//         the f16 at byte 208, q_e the signed quant in -32..31 (ggml::q6_k_quant),
//         isum = sum over e < 256 of sc[e / 16] * q_e * y_e   (|isum| < 2^31; a kernel may
//         form it as sum of sc * (q_e + 32) * y_e - 32 * sum over g < 16 of sc[g] * bsum16[g])
//         acc = fma(d_w * d_y, float(isum), acc) (d_w * d_y one f32 product);   y = acc
//         (no lanes, as q4_K)
//   q8_0  one accumulator acc = 0, then per block b (32 values): w_e the int8 quants,
//         isum = sum over e < 32 of w_e * y_e, dd = d_w * d_y (an f32 product),
//         acc = fma(dd, float(isum), acc);   y = acc   (no lanes, as q4_K)
//   q4_0, q5_0, iq4_nl, mxfp4  block b (32 values): h = b & 1, dd = d_w * d_y (mxfp4's
//         d_w its E8M0 scale halved, ggml::block32_scale),
//         isum[l] = sum of w_e * y_e over e = 4l .. 4l + 3 (l < 8), w_e the block's integer
//         (ggml::block32_int: q - 8, q - 16, the iq4 level, the doubled E2M1 level)
//         acc[8h + l] = fma(dd, float(isum[l]), acc[8h + l]);   y = reduce16(acc)
//   q4_1, q5_1  block b (32 values): h = b & 1, dd = d_w * d_y, dm = m_w * d_y,
//         isum[l] = sum of q_e * y_e over e = 4l .. 4l + 3 (q unsigned, x = d q + m)
//         acc[8h + l] = fma(dd, float(isum[l]), acc[8h + l]),
//         macc[8h + l] = fma(dm, float(sum4[l]), macc[8h + l]);   y = reduce16(acc) +
//         reduce16(macc)
//   q2_K  block b: dd = d_w * d_y, dm = dmin_w * d_y (f32 products), and for j < 16
//         sc[j] = scales[j] & 15, mn[j] = scales[j] >> 4
//         isum[L] = sum over e = 64p + 4L + t (p < 4, t < 4) of sc[e / 16] * q_e * y_e (q_e 0..3)
//         msum[l] = mn[2l] * bsum16[2l] + mn[2l + 1] * bsum16[2l + 1]                  (l < 8)
//         acc[L] = fma(dd, float(isum[L]), acc[L]);  macc[l] = fma(dm, float(msum[l]), macc[l])
//         y = reduce16(acc) - reduce8(macc)
//   q3_K, iq4_xs  block b: dd = d_w * d_y; s_e the signed 6-bit scale (stored - 32) of e's
//         sub-block (q3_K: e / 16, iq4_xs: e / 32); w_e the signed integer (q3_K: the 2-bit
//         quant, minus 4 unless e's hmask bit is set, in -4..3; iq4_xs: the iq4 level)
//         isum[L] = sum over e = 64p + 4L + t (p < 4, t < 4) of s_e * w_e * y_e
//         acc[L] = fma(dd, float(isum[L]), acc[L]);   y = reduce16(acc)   (no min terms)
//         (plugins/cpu/qint/*/qint_lowbit_*.cpp)
//   reduceN: for w = N/2, N/4, .., 1: a[l] += a[l + w] (l < w); the result is a[0].
// Every ISA variant (generic, avx2, avx512 with VNNI) computes exactly this, so all three give
// the same bits, and no step depends on m or on the other rows: batch invariant.
#pragma once

#include <stdint.h>

#include "gemm/gemm_kernels.hpp"

namespace specd::cpu::qint {

// Quantized activations of m rows; row i's values start at i * k, its scales at i * k / B
// (B = 256 for k-quants, 32 otherwise), its bsum16 at i * k / 16, its sum4 at i * k / 4.
// The arrays have at least 256 bytes of readable padding after the last row.
struct Act {
  const int8_t* q;
  const float* d;
  const int16_t* bsum16;  // k-quants only
  const int32_t* sum4;    // 32-value blocks only
};

struct QArgs {
  Act x;
  const uint8_t* w;  // [n, k] of dtype, row stride ldw bytes
  float* y;          // [m, n], row stride ldy floats
  int64_t m, n, k;
  int64_t ldw, ldy;
  specd_dtype dtype;
  // w is q4_K, q6_K or q8_0 in the packed layout (packed_weights.hpp), starting at a group; only
  // the AVX-512 interleaved kernels read it.
  bool packed = false;
};

// The weight dtypes this family computes; others stay on the exact f32 family.
// Called by a kernel's dtype switch for a type `supports` refuses: gemm_small_int8 refuses
// those before any kernel runs, so reaching it is a bug, never bad input.
[[noreturn]] void unreachable_dtype(specd_dtype dt, const char* kernel);

// A kernel's dtype switch: calls f.template operator()<T>() with T the one of `Ts` equal to
// `dt` (the run-time dtype as a compile-time one); any other dtype is unreachable_dtype.
template <uint32_t... Ts, class F>
void with_dtype(specd_dtype dt, const char* kernel, F&& f) {
  const bool served = ((dt == Ts && (f.template operator()<Ts>(), true)) || ...);
  if (!served) unreachable_dtype(dt, kernel);
}

static inline bool supports(specd_dtype dt) {
  switch (dt) {
    case SPECD_DTYPE_Q4_K:
    case SPECD_DTYPE_Q5_K:
    case SPECD_DTYPE_Q6_K:
    case SPECD_DTYPE_Q8_0:
    case SPECD_DTYPE_Q4_0:
    case SPECD_DTYPE_Q5_0:
    case SPECD_DTYPE_IQ4_NL:
    case SPECD_DTYPE_Q4_1:
    case SPECD_DTYPE_Q5_1:
    case SPECD_DTYPE_Q2_K:
    case SPECD_DTYPE_Q3_K:
    case SPECD_DTYPE_IQ4_XS:
    case SPECD_DTYPE_MXFP4:
      return true;
    default:
      return false;
  }
}

// True when dtype's activations are 256-value (q8_K) blocks, false for 32-value blocks.
static inline bool k_blocks(specd_dtype dt) {
  return dt == SPECD_DTYPE_Q4_K || dt == SPECD_DTYPE_Q5_K || dt == SPECD_DTYPE_Q6_K ||
         dt == SPECD_DTYPE_Q2_K || dt == SPECD_DTYPE_Q3_K || dt == SPECD_DTYPE_IQ4_XS;
}

// Bytes of per-task scratch a kernel needs for m rows of k values (prepared weight blocks, or
// the rows of x in a kernel's layout: reordered or unsigned quants and their scale vectors).
static inline int64_t scratch_bytes(int64_t m, int64_t k) {
  return (m > 4 ? m : 4) * (2 * k + 128) + 1024;
}

// Quantizes rows x[0:m] (row stride ldx floats, k values, a whole number of blocks) into the
// arrays of `out` (writable views of an Act's arrays).
void quantize_rows(const float* x, int64_t ldx, int64_t m, int64_t k, bool k_blocks, int8_t* q,
                   float* d, int16_t* bsum16, int32_t* sum4);

// The same bits with AVX-512 (call only after that CPU check).
void quantize_rows_avx512(const float* x, int64_t ldx, int64_t m, int64_t k, bool k_blocks,
                          int8_t* q, float* d, int16_t* bsum16, int32_t* sum4);

// y[:, j0:j1] for all m rows. `scratch`: scratch_bytes(m, k) bytes, 64-byte aligned.
void cols_generic(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch);
void cols_avx2(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch);
void cols_avx512(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch);  // + VNNI

}  // namespace specd::cpu::qint
