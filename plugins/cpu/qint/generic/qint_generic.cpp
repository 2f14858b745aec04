// The integer family's activation quantizer and its portable kernel: the definitions of
// qint.hpp written out element by element (the SIMD kernels compute the same bits).
#include <cmath>

#include "qint/qint.hpp"
#include "qint/qint_lowbit.hpp"
#include "qint/qint_reduce.hpp"
#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu::qint {
namespace {

int nearest(float v) {  // round half to even (the default rounding mode)
  return static_cast<int>(std::rint(v));
}

int8_t clamp127(int v) {
  return static_cast<int8_t>(v > 127 ? 127 : v < -127 ? -127 : v);
}

// One q8_K block of 256 values (qint.hpp).
void quantize_k_block(const float* x, int8_t* q, float* d, int16_t* bsum16) {
  float amax = 0, max = 0;
  for (int i = 0; i < 256; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax == 0) {
    *d = 0;
    for (int i = 0; i < 256; ++i) q[i] = 0;
  } else {
    const float iscale = -127.0f / max;
    for (int i = 0; i < 256; ++i) q[i] = clamp127(nearest(iscale * x[i]));
    *d = 1.0f / iscale;
  }
  for (int g = 0; g < 16; ++g) {
    int s = 0;
    for (int i = 0; i < 16; ++i) s += q[16 * g + i];
    bsum16[g] = static_cast<int16_t>(s);
  }
}

// One block of 32 values (qint.hpp).
void quantize_32_block(const float* x, int8_t* q, float* d, int32_t* sum4) {
  float amax = 0;
  for (int i = 0; i < 32; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) amax = ax;
  }
  const float dd = amax / 127.0f;
  const float id = dd != 0 ? 1.0f / dd : 0.0f;
  for (int i = 0; i < 32; ++i) q[i] = clamp127(nearest(x[i] * id));
  *d = dd;
  for (int g = 0; g < 8; ++g) sum4[g] = q[4 * g] + q[4 * g + 1] + q[4 * g + 2] + q[4 * g + 3];
}

// The lane of element e of a q5_K block (qint.hpp): bits 6, 4, 5, 3 of e.
unsigned lane_q5_k(unsigned e) {
  return 8 * ((e >> 6) & 1) + 4 * ((e >> 4) & 1) + 2 * ((e >> 5) & 1) + ((e >> 3) & 1);
}

// A q5_K block's f32 step: acc[L] += dd isum[L], then acc[g] -= wm[g] ys[g] (g < 16).
void k_block_step(float* acc, float dd, const int32_t* isum, const float* wm, float dy,
                  const int16_t* bs) {
  for (int l = 0; l < 16; ++l) acc[l] = std::fma(dd, static_cast<float>(isum[l]), acc[l]);
  for (int g = 0; g < 16; ++g) acc[g] = std::fma(-wm[g], dy * static_cast<float>(bs[g]), acc[g]);
}

// q4_K: one exact integer isum and msum per block, one f32 accumulator.
float dot_q4_k(const uint8_t* w, const int8_t* y, const float* dy, const int16_t* bs, int64_t nb) {
  float acc = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + 144 * b;
    const int8_t* yb = y + 256 * b;
    const int16_t* bsb = bs + 16 * b;
    uint8_t sc[8], mn[8];
    ggml::k_scales_mins(blk + 4, sc, mn);
    int32_t isum = 0, msum = 0;
    for (unsigned e = 0; e < 256; ++e)
      isum += static_cast<int32_t>(sc[e >> 5] * ggml::q4_k_quant(blk + 16, e)) * yb[e];
    for (int g = 0; g < 8; ++g) msum += mn[g] * (bsb[2 * g] + bsb[2 * g + 1]);
    const float dd = ggml::load_f16(blk) * dy[b], dm = ggml::load_f16(blk + 2) * dy[b];
    acc = std::fma(dd, static_cast<float>(isum), acc);
    acc = std::fma(-dm, static_cast<float>(msum), acc);
  }
  return acc;
}

float dot_q5_k(const uint8_t* w, const int8_t* y, const float* dy, const int16_t* bs, int64_t nb) {
  float acc[16] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + 176 * b;
    const int8_t* yb = y + 256 * b;
    uint8_t sc[8], mn[8];
    ggml::k_scales_mins(blk + 4, sc, mn);
    int32_t isum[16] = {};
    for (unsigned e = 0; e < 256; ++e)
      isum[lane_q5_k(e)] += static_cast<int32_t>(sc[e >> 5] * ggml::q5_k_quant(blk, e)) * yb[e];
    const float dmin = ggml::load_f16(blk + 2);
    float wm[16];
    for (int g = 0; g < 16; ++g) wm[g] = dmin * static_cast<float>(mn[g >> 1]);
    k_block_step(acc, ggml::load_f16(blk) * dy[b], isum, wm, dy[b], bs + 16 * b);
  }
  return reduce(acc, 16);
}

// q6_K: one exact integer isum per block (the signed quants), one f32 accumulator.
float dot_q6_k(const uint8_t* w, const int8_t* y, const float* dy, int64_t nb) {
  float acc = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + 210 * b;
    const int8_t* yb = y + 256 * b;
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
    int32_t isum = 0;
    for (unsigned e = 0; e < 256; ++e) isum += sc[e >> 4] * ggml::q6_k_quant(blk, e) * yb[e];
    acc = std::fma(ggml::load_f16(blk + 208) * dy[b], static_cast<float>(isum), acc);
  }
  return acc;
}

// q8_0: one exact integer per block, one f32 accumulator.
float dot_q8_0(const uint8_t* w, const int8_t* y, const float* dy, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + ggml::block_layout(ggml::kQ8_0).bytes * b;
    int32_t isum = 0;
    for (unsigned e = 0; e < 32; ++e)
      isum += ggml::block32_int<ggml::kQ8_0>(blk, e) * y[32 * b + e];
    acc = std::fma(ggml::block32_scale<ggml::kQ8_0>(blk) * dy[b], static_cast<float>(isum), acc);
  }
  return acc;
}

// 32-element blocks without a min (q4_0, q5_0, iq4_nl, mxfp4): d at byte 0.
template <uint32_t T>
float dot_32(const uint8_t* w, const int8_t* y, const float* dy, int64_t nb) {
  constexpr uint32_t bytes = ggml::block_layout(T).bytes;
  float acc[16] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + bytes * b;
    const float dd = ggml::block32_scale<T>(blk) * dy[b];
    for (unsigned l = 0; l < 8; ++l) {
      int32_t s = 0;
      for (unsigned t = 0; t < 4; ++t)
        s += ggml::block32_int<T>(blk, 4 * l + t) * y[32 * b + 4 * l + t];
      float& a = acc[8 * (b & 1) + l];
      a = std::fma(dd, static_cast<float>(s), a);
    }
  }
  return reduce(acc, 16);
}

// 32-element blocks with a min (q4_1, q5_1): d at byte 0, m at byte 2.
template <uint32_t T>
float dot_32_min(const uint8_t* w, const int8_t* y, const float* dy, const int32_t* s4,
                 int64_t nb) {
  constexpr uint32_t bytes = ggml::block_layout(T).bytes;
  float acc[16] = {}, macc[16] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + bytes * b;
    const float dd = ggml::load_f16(blk) * dy[b], dm = ggml::load_f16(blk + 2) * dy[b];
    for (unsigned l = 0; l < 8; ++l) {
      int32_t s = 0;
      for (unsigned t = 0; t < 4; ++t)
        s += static_cast<int32_t>(ggml::block32_quant_min<T>(blk, 4 * l + t)) *
             y[32 * b + 4 * l + t];
      const unsigned lane = 8 * (b & 1) + l;
      acc[lane] = std::fma(dd, static_cast<float>(s), acc[lane]);
      macc[lane] = std::fma(dm, static_cast<float>(s4[8 * b + l]), macc[lane]);
    }
  }
  return reduce(acc, 16) + reduce(macc, 16);
}

}  // namespace

void quantize_rows(const float* x, int64_t ldx, int64_t m, int64_t k, bool kb, int8_t* q, float* d,
                   int16_t* bsum16, int32_t* sum4) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xr = x + i * ldx;
    if (kb) {
      for (int64_t b = 0; b < k / 256; ++b)
        quantize_k_block(xr + 256 * b, q + i * k + 256 * b, d + i * (k / 256) + b,
                         bsum16 + i * (k / 16) + 16 * b);
    } else {
      for (int64_t b = 0; b < k / 32; ++b)
        quantize_32_block(xr + 32 * b, q + i * k + 32 * b, d + i * (k / 32) + b,
                          sum4 + i * (k / 4) + 8 * b);
    }
  }
}

void cols_generic(const QArgs& a, int64_t j0, int64_t j1, uint8_t*) {
  const int64_t k = a.k;
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* w = a.w + j * a.ldw;
    for (int64_t i = 0; i < a.m; ++i) {
      const int8_t* y = a.x.q + i * k;
      const float* d = a.x.d + i * (k / (k_blocks(a.dtype) ? 256 : 32));
      const int16_t* bs = a.x.bsum16 + i * (k / 16);
      float r;
      switch (a.dtype) {
        case SPECD_DTYPE_Q4_K:
          r = dot_q4_k(w, y, d, bs, k / 256);
          break;
        case SPECD_DTYPE_Q5_K:
          r = dot_q5_k(w, y, d, bs, k / 256);
          break;
        case SPECD_DTYPE_Q6_K:
          r = dot_q6_k(w, y, d, k / 256);
          break;
        case SPECD_DTYPE_Q4_0:
          r = dot_32<ggml::kQ4_0>(w, y, d, k / 32);
          break;
        case SPECD_DTYPE_Q5_0:
          r = dot_32<ggml::kQ5_0>(w, y, d, k / 32);
          break;
        case SPECD_DTYPE_IQ4_NL:
          r = dot_32<ggml::kIQ4_NL>(w, y, d, k / 32);
          break;
        case SPECD_DTYPE_MXFP4:
          r = dot_32<ggml::kMXFP4>(w, y, d, k / 32);
          break;
        case SPECD_DTYPE_Q4_1:
          r = dot_32_min<ggml::kQ4_1>(w, y, d, a.x.sum4 + i * (k / 4), k / 32);
          break;
        case SPECD_DTYPE_Q5_1:
          r = dot_32_min<ggml::kQ5_1>(w, y, d, a.x.sum4 + i * (k / 4), k / 32);
          break;
        case SPECD_DTYPE_Q2_K:
        case SPECD_DTYPE_Q3_K:
        case SPECD_DTYPE_IQ4_XS:
          r = dot_lowbit(a.dtype, w, y, d, bs, k / 256);
          break;
        case SPECD_DTYPE_Q8_0:
          r = dot_q8_0(w, y, d, k / 32);
          break;
        default:
          unreachable_dtype(a.dtype, "cols_generic");
      }
      a.y[i * a.ldy + j] = r;
    }
  }
}

}  // namespace specd::cpu::qint
