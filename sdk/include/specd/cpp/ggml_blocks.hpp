// specd SDK — ggml's weight element types: block layouts and exact dequantization.
//
// The one decoding source for the host (GGUF tooling), the CPU backend and the CUDA/HIP
// kernels. Header-only and dependency-free: no C++ library, __builtin_memcpy for unaligned
// loads, every function SPECD_HD (__host__ __device__ under nvcc/hipcc, empty otherwise).
// Functions have internal linkage (static) on purpose: a translation unit compiled for one
// instruction set (-mavx512f) must never lend its copy to code running on a CPU without it.
//
// Layouts follow llama.cpp (ggml-common.h); all multi-byte fields are little-endian, `d`,
// `dmin` and `m` are IEEE binary16. Element i of a block (0 <= i < block elements):
//   q4_0   32 /  18 B: d, qs[16]                 x = d * (q - 8), q = nibble i
//   q4_1   32 /  20 B: d, m, qs[16]              x = d * q + m
//   q5_0   32 /  22 B: d, qh (u32), qs[16]       x = d * (q - 16), q = nibble | bit i of qh << 4
//   q5_1   32 /  24 B: d, m, qh, qs[16]          x = d * q + m
//   q8_0   32 /  34 B: d, qs[32] (int8)          x = d * q
//   q2_K  256 /  84 B: scales[16], qs[64], d, dmin   x = (d * (sc & 15)) * q - dmin * (sc >> 4)
//   q3_K  256 / 110 B: hmask[32], qs[64], scales[12] (6-bit), d   x = (d * (s - 32)) * q
//   q4_K  256 / 144 B: d, dmin, scales[12] (8 x 6-bit scale/min), qs[128]
//                      x = (d * sc) * q - dmin * m, per 32 elements
//   q5_K  256 / 176 B: d, dmin, scales[12], qh[32], qs[128]       as q4_K with a 5th bit
//   q6_K  256 / 210 B: ql[128], qh[64], scales[16] (int8), d      x = (d * s) * (q - 32)
//   iq4_nl 32 /  18 B: d, qs[16]                 x = d * kvalue[nibble i]
//   iq4_xs 256 / 136 B: d, scales_h (u16), scales_l[4], qs[128]   x = (d * (s - 32)) * kvalue[q]
//   mxfp4  32 /  17 B: e (E8M0), qs[16]          x = 2^(e - 128) * level[nibble i], the levels
//                      OCP MX's E2M1 values doubled (0, 1, 2, 3, 4, 6, 8, 12 and negated)
// The f32 arithmetic (products and their order) is that of llama.cpp's gguf-py
// (gguf/quants.py), so values are bit-identical to its dequantization. Compile users with
// floating-point contraction off (-ffp-contract=off, nvcc --fmad=false): a fused d*q+m
// would round differently.
#pragma once

#include <stdint.h>

#include "specd/backend.h"

#ifndef SPECD_HD
#if defined(__CUDACC__) || defined(__HIPCC__)
#define SPECD_HD __host__ __device__
#else
#define SPECD_HD
#endif
#endif

#define SPECD_BLOCK_FN SPECD_HD static inline
#define SPECD_RESTRICT __restrict__

namespace specd::ggml {

// ggml type ids: specd_dtype's (backend.h, where they are defined) and the GGUF types specd
// reads but never computes with. The one list of ids; core's GgmlType takes its values here.
enum : uint32_t {
  kF32 = SPECD_DTYPE_F32,
  kF16 = SPECD_DTYPE_F16,
  kQ4_0 = SPECD_DTYPE_Q4_0,
  kQ4_1 = SPECD_DTYPE_Q4_1,
  kQ5_0 = SPECD_DTYPE_Q5_0,
  kQ5_1 = SPECD_DTYPE_Q5_1,
  kQ8_0 = SPECD_DTYPE_Q8_0,
  kQ2_K = SPECD_DTYPE_Q2_K,
  kQ3_K = SPECD_DTYPE_Q3_K,
  kQ4_K = SPECD_DTYPE_Q4_K,
  kQ5_K = SPECD_DTYPE_Q5_K,
  kQ6_K = SPECD_DTYPE_Q6_K,
  kIQ4_NL = SPECD_DTYPE_IQ4_NL,
  kIQ4_XS = SPECD_DTYPE_IQ4_XS,
  kMXFP4 = SPECD_DTYPE_MXFP4,
  kBF16 = SPECD_DTYPE_BF16,
  kQ8_1 = 9,
  kQ8_K = 15,
  kI8 = 24,
  kI16 = 25,
  kI32 = SPECD_DTYPE_I32,
  kI64 = 27,
  kF64 = 28,
};

struct BlockLayout {
  uint32_t elements;  // per block; 0 = a type this header does not decode
  uint32_t bytes;     // per block
};

// Layout of a weight type this header decodes, or {0, 0}.
SPECD_BLOCK_FN constexpr BlockLayout block_layout(uint32_t type) {
  switch (type) {
    case kF32:
      return {1, 4};
    case kF16:
    case kBF16:
      return {1, 2};
    case kQ4_0:
    case kIQ4_NL:
      return {32, 18};
    case kQ4_1:
      return {32, 20};
    case kMXFP4:
      return {32, 17};
    case kQ5_0:
      return {32, 22};
    case kQ5_1:
      return {32, 24};
    case kQ8_0:
      return {32, 34};
    case kQ2_K:
      return {256, 84};
    case kQ3_K:
      return {256, 110};
    case kQ4_K:
      return {256, 144};
    case kQ5_K:
      return {256, 176};
    case kQ6_K:
      return {256, 210};
    case kIQ4_XS:
      return {256, 136};
    default:
      return {0, 0};
  }
}

// Lower-case ggml name of a type, or "unknown".
SPECD_BLOCK_FN constexpr const char* type_name(uint32_t type) {
  switch (type) {
    case kF32:
      return "f32";
    case kF16:
      return "f16";
    case kBF16:
      return "bf16";
    case kQ4_0:
      return "q4_0";
    case kQ4_1:
      return "q4_1";
    case kQ5_0:
      return "q5_0";
    case kQ5_1:
      return "q5_1";
    case kQ8_0:
      return "q8_0";
    case kQ2_K:
      return "q2_K";
    case kQ3_K:
      return "q3_K";
    case kQ4_K:
      return "q4_K";
    case kQ5_K:
      return "q5_K";
    case kQ6_K:
      return "q6_K";
    case kIQ4_NL:
      return "iq4_nl";
    case kIQ4_XS:
      return "iq4_xs";
    case kMXFP4:
      return "mxfp4";
    default:
      return "unknown";
  }
}

// Bytes of a row of `cols` elements, or 0 for an unknown type or a row that is not a whole
// number of blocks.
SPECD_BLOCK_FN constexpr uint64_t row_bytes(uint32_t type, int64_t cols) {
  const BlockLayout l = block_layout(type);
  if (l.elements == 0 || cols < 0 || cols % l.elements != 0) return 0;
  return static_cast<uint64_t>(cols) / l.elements * l.bytes;
}

// ---- scalar conversions -------------------------------------------------------------------

SPECD_BLOCK_FN float bits_to_f32(uint32_t bits) {
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

SPECD_BLOCK_FN uint32_t f32_to_bits(float f) {
  uint32_t bits;
  __builtin_memcpy(&bits, &f, 4);
  return bits;
}

// IEEE binary16 to f32, exact (NaN payloads kept). Subnormals are renormalised through one
// exact f32 subtraction (F. Giesen's method): no loop, no data-dependent control flow.
SPECD_BLOCK_FN float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t o = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t exp = o & 0x0f800000u;  // the f16 exponent field, shifted
  o += (127u - 15u) << 23;
  if (exp == 0x0f800000u) {  // inf / nan
    o += (128u - 16u) << 23;
  } else if (exp == 0) {  // zero / subnormal: mant * 2^-24, exactly
    o += 1u << 23;
    o = f32_to_bits(bits_to_f32(o) - bits_to_f32(113u << 23));
  }
  return bits_to_f32(o | sign);
}

SPECD_BLOCK_FN float bf16_to_f32(uint16_t h) {
  return bits_to_f32(static_cast<uint32_t>(h) << 16);
}

// f32 to IEEE binary16, rounded to nearest even, overflow to inf, a NaN to the quiet NaN with
// the top 10 bits of its payload: the bits of the x86 conversion instructions (F16C,
// AVX-512) on every input, and the inverse of f16_to_f32 on every value a half holds. Integer
// arithmetic only, so host and device give the same bits.
SPECD_BLOCK_FN uint16_t f32_to_f16(float value) {
  const uint32_t x = f32_to_bits(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u)  // NaN: quiet, payload kept
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // inf
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): shift the implicit-one mantissa into place, round to even.
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t half = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

// One q8_0 block (34 bytes: f16 d, 32 int8 q) from 32 values, as llama.cpp's
// quantize_row_q8_0_ref: d = max|x| / 127, q = x · (1/d) rounded half away from zero, d stored
// as f16 (the quants come from the f32 d, the decoder multiplies by the f16 one).
SPECD_BLOCK_FN void quantize_q8_0_block(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float a = x[j] < 0.0f ? -x[j] : x[j];
    amax = a > amax ? a : amax;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t dh = f32_to_f16(d);
  out[0] = static_cast<uint8_t>(dh & 0xffu);
  out[1] = static_cast<uint8_t>(dh >> 8);
  for (int j = 0; j < 32; ++j) {
    const float v = x[j] * id;
    // Half away from zero (roundf), written out so host and device round alike: v - trunc(v)
    // is exact, so the comparison sees the true fraction (v + 0.5 would round first).
    float r = __builtin_truncf(v);
    const float frac = v - r;
    if (frac >= 0.5f) r += 1.0f;
    if (frac <= -0.5f) r -= 1.0f;
    out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(r));
  }
}

SPECD_BLOCK_FN uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, 2);
  return v;
}

SPECD_BLOCK_FN uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

SPECD_BLOCK_FN float load_f16(const uint8_t* p) {
  return f16_to_f32(load_u16(p));
}

// The 16 non-uniform levels of iq4_nl / iq4_xs (llama.cpp kvalues_iq4nl), packed as int8
// bytes so device code needs no table in memory.
SPECD_BLOCK_FN int iq4_level(unsigned q) {
  // -127, -104, -83, -65, -49, -35, -22, -10 | 1, 13, 25, 38, 53, 69, 89, 113
  const uint64_t lo = 0xf6eaddcfbfad9881ull;
  const uint64_t hi = 0x7159453526190d01ull;
  const uint64_t w = q < 8 ? lo : hi;
  return static_cast<int8_t>(static_cast<uint8_t>(w >> (8 * (q & 7))));
}

// mxfp4's 16 levels: the E2M1 values doubled to integers (llama.cpp kvalues_mxfp4), packed as
// int8 bytes as iq4_level's.
SPECD_BLOCK_FN int mxfp4_level(unsigned q) {
  // 0, 1, 2, 3, 4, 6, 8, 12 | 0, -1, -2, -3, -4, -6, -8, -12
  const uint64_t lo = 0x0c08060403020100ull;
  const uint64_t hi = 0xf4f8fafcfdfeff00ull;
  const uint64_t w = q < 8 ? lo : hi;
  return static_cast<int8_t>(static_cast<uint8_t>(w >> (8 * (q & 7))));
}

// An E8M0 scale byte halved, as mxfp4 applies it to its doubled levels: 2^(e - 128), from its
// bits (e < 2: a subnormal). Exact, as ggml's ggml_e8m0_to_fp32_half.
SPECD_BLOCK_FN float e8m0_half(unsigned e) {
  return bits_to_f32(e < 2 ? 0x00200000u << e : (e - 1u) << 23);
}

// ---- per-block pieces shared by the element and the block decoders -----------------------

// q4_K / q5_K: the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes.
SPECD_BLOCK_FN void k_scale_min(const uint8_t* s, unsigned j, unsigned* sc, unsigned* m) {
  if (j < 4) {
    *sc = s[j] & 63u;
    *m = s[j + 4] & 63u;
  } else {
    *sc = (s[j + 4] & 15u) | ((s[j - 4] >> 2) & 48u);
    *m = (s[j + 4] >> 4) | ((s[j] >> 2) & 48u);
  }
}

// q3_K: the signed 6-bit scale of sub-block j (0..15).
SPECD_BLOCK_FN int q3_k_scale(const uint8_t* s, unsigned j) {
  const unsigned lo = j < 8 ? (s[j] & 15u) : (s[j - 8] >> 4);
  const unsigned hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3u;
  return static_cast<int>(lo | (hi << 4)) - 32;
}

// iq4_xs: the signed 6-bit scale of sub-block j (0..7).
SPECD_BLOCK_FN int iq4_xs_scale(const uint8_t* b, unsigned j) {
  const unsigned lo = (b[4 + j / 2] >> (4 * (j & 1))) & 15u;
  const unsigned hi = (load_u16(b + 2) >> (2 * j)) & 3u;
  return static_cast<int>(lo | (hi << 4)) - 32;
}

// q4_K / q5_K: the 8 scales and 8 mins of a block as 4 little-endian words (byte i of w[0]
// and w[1]: scales i and 4 + i; of w[2] and w[3]: mins i and 4 + i), from the 12 packed bytes
// with 32-bit word operations.
SPECD_BLOCK_FN void k_scales_mins_words(const uint8_t* s, uint32_t w[4]) {
  const uint32_t a = load_u32(s), b = load_u32(s + 4), c = load_u32(s + 8);
  w[0] = a & 0x3f3f3f3fu;
  w[1] = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
  w[2] = b & 0x3f3f3f3fu;
  w[3] = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
}

// q4_K / q5_K: all 8 scales (sc[j]) and mins (m[j]) of a block at once, the same values as
// k_scale_min(s, j, ...) for j = 0..7.
SPECD_BLOCK_FN void k_scales_mins(const uint8_t* s, uint8_t sc[8], uint8_t m[8]) {
  uint32_t w[4];
  k_scales_mins_words(s, w);
  for (unsigned i = 0; i < 4; ++i) {
    sc[i] = static_cast<uint8_t>(w[0] >> (8 * i));
    sc[4 + i] = static_cast<uint8_t>(w[1] >> (8 * i));
    m[i] = static_cast<uint8_t>(w[2] >> (8 * i));
    m[4 + i] = static_cast<uint8_t>(w[3] >> (8 * i));
  }
}

// Quant of element i (raw, before any offset).
SPECD_BLOCK_FN unsigned nibble32(const uint8_t* qs, unsigned i) {  // 32-element blocks
  return (qs[i & 15] >> (4 * (i >> 4))) & 15u;
}
SPECD_BLOCK_FN unsigned q2_k_quant(const uint8_t* b, unsigned i) {
  return (b[16 + (i >> 7) * 32 + (i & 31)] >> (2 * ((i >> 5) & 3))) & 3u;
}
SPECD_BLOCK_FN int q3_k_quant(const uint8_t* b, unsigned i) {
  const unsigned lo = (b[32 + (i >> 7) * 32 + (i & 31)] >> (2 * ((i >> 5) & 3))) & 3u;
  const unsigned hi = (b[i & 31] >> (i >> 5)) & 1u;
  return static_cast<int>(lo) - (hi ? 0 : 4);
}
SPECD_BLOCK_FN unsigned q4_k_quant(const uint8_t* qs, unsigned i) {
  return (qs[(i >> 6) * 32 + (i & 31)] >> (4 * ((i >> 5) & 1))) & 15u;
}
SPECD_BLOCK_FN int q6_k_quant(const uint8_t* b, unsigned i) {
  const unsigned lo = (b[(i >> 7) * 64 + (i & 63)] >> (4 * ((i >> 6) & 1))) & 15u;
  const unsigned hi = (b[128 + (i >> 7) * 32 + (i & 31)] >> (2 * ((i >> 5) & 3))) & 3u;
  return static_cast<int>(lo | (hi << 4)) - 32;
}
SPECD_BLOCK_FN unsigned iq4_xs_quant(const uint8_t* b, unsigned i) {
  return (b[8 + (i >> 5) * 16 + (i & 15)] >> (4 * ((i >> 4) & 1))) & 15u;
}

// q5_K: the 5-bit quant of element i (qh at byte 16, nibbles at byte 48).
SPECD_BLOCK_FN unsigned q5_k_quant(const uint8_t* b, unsigned i) {
  return q4_k_quant(b + 48, i) | (((b[16 + (i & 31)] >> (i >> 5)) & 1u) << 4);
}

// The scale d of a 32-element block: the f16 at byte 0, or mxfp4's E8M0 byte halved.
template <uint32_t T>
SPECD_BLOCK_FN float block32_scale(const uint8_t* b) {
  if constexpr (T == kMXFP4) {
    return e8m0_half(b[0]);
  } else {
    return load_f16(b);
  }
}

// The integer of element i of a 32-element block without a min, x = block32_scale(b) *
// block32_int(b, i): q4_0 q - 8, q5_0 q - 16, q8_0 the int8, iq4_nl and mxfp4 the level.
template <uint32_t T>
SPECD_BLOCK_FN int block32_int(const uint8_t* b, unsigned i) {
  if constexpr (T == kQ4_0) {
    return static_cast<int>(nibble32(b + 2, i)) - 8;
  } else if constexpr (T == kQ5_0) {
    return static_cast<int>(nibble32(b + 6, i) | (((load_u32(b + 2) >> i) & 1u) << 4)) - 16;
  } else if constexpr (T == kQ8_0) {
    return static_cast<int8_t>(b[2 + i]);
  } else if constexpr (T == kMXFP4) {
    return mxfp4_level(nibble32(b + 1, i));
  } else {
    static_assert(T == kIQ4_NL, "block32_int: a 32-element type without a min");
    return iq4_level(nibble32(b + 2, i));
  }
}

// The unsigned quant of element i of a 32-element block with a min, x = d * q + m:
// q4_1 the nibble, q5_1 the nibble and its fifth bit.
template <uint32_t T>
SPECD_BLOCK_FN unsigned block32_quant_min(const uint8_t* b, unsigned i) {
  if constexpr (T == kQ4_1) {
    return nibble32(b + 4, i);
  } else {
    static_assert(T == kQ5_1, "block32_quant_min: a 32-element type with a min");
    return nibble32(b + 8, i) | (((load_u32(b + 4) >> i) & 1u) << 4);
  }
}

// ---- element i of one block ---------------------------------------------------------------

template <uint32_t T>
SPECD_BLOCK_FN float block_element(const uint8_t* b, unsigned i) {
  if constexpr (T == kF32) {
    return bits_to_f32(load_u32(b));
  } else if constexpr (T == kF16) {
    return load_f16(b);
  } else if constexpr (T == kBF16) {
    return bf16_to_f32(load_u16(b));
  } else if constexpr (T == kQ4_0) {
    return load_f16(b) * static_cast<float>(static_cast<int>(nibble32(b + 2, i)) - 8);
  } else if constexpr (T == kQ4_1) {
    return load_f16(b) * static_cast<float>(nibble32(b + 4, i)) + load_f16(b + 2);
  } else if constexpr (T == kQ5_0) {
    const unsigned q = nibble32(b + 6, i) | (((load_u32(b + 2) >> i) & 1u) << 4);
    return load_f16(b) * static_cast<float>(static_cast<int>(q) - 16);
  } else if constexpr (T == kQ5_1) {
    const unsigned q = nibble32(b + 8, i) | (((load_u32(b + 4) >> i) & 1u) << 4);
    return load_f16(b) * static_cast<float>(q) + load_f16(b + 2);
  } else if constexpr (T == kQ8_0) {
    return load_f16(b) * static_cast<float>(static_cast<int8_t>(b[2 + i]));
  } else if constexpr (T == kQ2_K) {
    const unsigned sc = b[i >> 4];
    const float dl = load_f16(b + 80) * static_cast<float>(sc & 15u);
    const float ml = load_f16(b + 82) * static_cast<float>(sc >> 4);
    return dl * static_cast<float>(q2_k_quant(b, i)) - ml;
  } else if constexpr (T == kQ3_K) {
    const float dl = load_f16(b + 108) * static_cast<float>(q3_k_scale(b + 96, i >> 4));
    return dl * static_cast<float>(q3_k_quant(b, i));
  } else if constexpr (T == kQ4_K || T == kQ5_K) {
    unsigned sc, m;
    k_scale_min(b + 4, i >> 5, &sc, &m);
    const float dl = load_f16(b) * static_cast<float>(sc);
    const float ml = load_f16(b + 2) * static_cast<float>(m);
    unsigned q;
    if constexpr (T == kQ4_K) {
      q = q4_k_quant(b + 16, i);
    } else {
      q = q4_k_quant(b + 48, i) | (((b[16 + (i & 31)] >> (i >> 5)) & 1u) << 4);
    }
    return dl * static_cast<float>(q) - ml;
  } else if constexpr (T == kQ6_K) {
    const float dl = load_f16(b + 208) * static_cast<float>(static_cast<int8_t>(b[192 + (i >> 4)]));
    return dl * static_cast<float>(q6_k_quant(b, i));
  } else if constexpr (T == kIQ4_NL) {
    return load_f16(b) * static_cast<float>(iq4_level(nibble32(b + 2, i)));
  } else if constexpr (T == kMXFP4) {
    return e8m0_half(b[0]) * static_cast<float>(mxfp4_level(nibble32(b + 1, i)));
  } else {
    static_assert(T == kIQ4_XS, "block_element: type this header does not decode");
    const float dl = load_f16(b) * static_cast<float>(iq4_xs_scale(b, i >> 5));
    return dl * static_cast<float>(iq4_level(iq4_xs_quant(b, i)));
  }
}

// Element c of a row of type T (the GPU kernels' accessor).
template <uint32_t T>
SPECD_BLOCK_FN float element(const uint8_t* row, int64_t c) {
  constexpr BlockLayout l = block_layout(T);
  return block_element<T>(row + (c / l.elements) * l.bytes, static_cast<unsigned>(c % l.elements));
}

// ---- whole blocks ---------------------------------------------------------------------------
// The same products as block_element, with each sub-block's scale computed once and inner
// loops over contiguous bytes with fixed shifts (so compilers vectorize them): the bits are
// equal (the conformance tests check both against llama.cpp's).

// 32-element blocks: d at 0 (mxfp4: its E8M0 byte), then (q4_1, q5_1) m at 2, then (q5_*) the
// 32 fifth bits, then 16 bytes of nibbles (element t low, t + 16 high).
template <uint32_t T>
SPECD_BLOCK_FN void dequantize_block32(const uint8_t* SPECD_RESTRICT b, float* SPECD_RESTRICT out) {
  const float d = block32_scale<T>(b);
  if constexpr (T == kQ8_0) {
    for (unsigned i = 0; i < 32; ++i)
      out[i] = d * static_cast<float>(static_cast<int8_t>(b[2 + i]));
  } else {
    constexpr unsigned qs_at = T == kQ4_1    ? 4
                               : T == kQ5_0  ? 6
                               : T == kQ5_1  ? 8
                               : T == kMXFP4 ? 1
                                             : 2;
    constexpr bool has_min = T == kQ4_1 || T == kQ5_1;
    constexpr bool five = T == kQ5_0 || T == kQ5_1;
    const float m = has_min ? load_f16(b + 2) : 0.0f;
    const uint32_t qh = five ? load_u32(b + (T == kQ5_0 ? 2 : 4)) : 0u;
    const uint8_t* qs = b + qs_at;
    for (unsigned h = 0; h < 2; ++h) {
      for (unsigned t = 0; t < 16; ++t) {
        const unsigned i = 16 * h + t;
        unsigned q = (qs[t] >> (4 * h)) & 15u;
        if constexpr (five) q |= ((qh >> i) & 1u) << 4;
        float x;
        if constexpr (T == kIQ4_NL) {
          x = d * static_cast<float>(iq4_level(q));
        } else if constexpr (T == kMXFP4) {
          x = d * static_cast<float>(mxfp4_level(q));
        } else if constexpr (has_min) {
          x = d * static_cast<float>(q) + m;
        } else {
          x = d * static_cast<float>(static_cast<int>(q) - (five ? 16 : 8));
        }
        out[i] = x;
      }
    }
  }
}

template <uint32_t T>
SPECD_BLOCK_FN void dequantize_block(const uint8_t* SPECD_RESTRICT b, float* SPECD_RESTRICT out) {
  if constexpr (T == kQ2_K) {
    const float d = load_f16(b + 80), dmin = load_f16(b + 82);
    for (unsigned j = 0; j < 16; ++j) {  // 16 elements of one scale: bytes 16 + c*32 + l
      const float dl = d * static_cast<float>(b[j] & 15u);
      const float ml = dmin * static_cast<float>(b[j] >> 4);
      const uint8_t* q = b + 16 + (j >> 3) * 32 + (j & 1) * 16;
      const unsigned shift = 2 * ((j >> 1) & 3);
      for (unsigned t = 0; t < 16; ++t)
        out[16 * j + t] = dl * static_cast<float>((q[t] >> shift) & 3u) - ml;
    }
  } else if constexpr (T == kQ3_K) {
    const float d = load_f16(b + 108);
    for (unsigned j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(q3_k_scale(b + 96, j));
      const unsigned l0 = (j & 1) * 16;
      const uint8_t* q = b + 32 + (j >> 3) * 32 + l0;
      const unsigned shift = 2 * ((j >> 1) & 3), hbit = j >> 1;
      for (unsigned t = 0; t < 16; ++t) {
        const int lo = static_cast<int>((q[t] >> shift) & 3u);
        const int hi = static_cast<int>((b[l0 + t] >> hbit) & 1u);
        out[16 * j + t] = dl * static_cast<float>(lo - 4 + 4 * hi);
      }
    }
  } else if constexpr (T == kQ4_K || T == kQ5_K) {
    const float d = load_f16(b), dmin = load_f16(b + 2);
    for (unsigned j = 0; j < 8; ++j) {
      unsigned sc, m;
      k_scale_min(b + 4, j, &sc, &m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* qs = b + (T == kQ4_K ? 16 : 48) + (j >> 1) * 32;
      const unsigned shift = 4 * (j & 1);
      for (unsigned l = 0; l < 32; ++l) {
        unsigned q = (qs[l] >> shift) & 15u;
        if constexpr (T == kQ5_K) q |= ((b[16 + l] >> j) & 1u) << 4;
        out[32 * j + l] = dl * static_cast<float>(q) - ml;
      }
    }
  } else if constexpr (T == kQ6_K) {
    const float d = load_f16(b + 208);
    for (unsigned j = 0; j < 16; ++j) {  // element 16j + t: half c, group s, byte l
      const float dl = d * static_cast<float>(static_cast<int8_t>(b[192 + j]));
      const unsigned c = j >> 3, s = (j >> 1) & 3, l0 = (j & 1) * 16;
      const uint8_t* ql = b + c * 64 + (s & 1) * 32 + l0;
      const uint8_t* qh = b + 128 + c * 32 + l0;
      const unsigned lshift = 4 * (s >> 1), hshift = 2 * s;
      for (unsigned t = 0; t < 16; ++t) {
        const int q = static_cast<int>(((ql[t] >> lshift) & 15u) | (((qh[t] >> hshift) & 3u) << 4));
        out[16 * j + t] = dl * static_cast<float>(q - 32);
      }
    }
  } else if constexpr (T == kIQ4_XS) {
    const float d = load_f16(b);
    for (unsigned j = 0; j < 8; ++j) {
      const float dl = d * static_cast<float>(iq4_xs_scale(b, j));
      const uint8_t* qs = b + 8 + j * 16;
      for (unsigned h = 0; h < 2; ++h)
        for (unsigned t = 0; t < 16; ++t)
          out[32 * j + 16 * h + t] = dl * static_cast<float>(iq4_level((qs[t] >> (4 * h)) & 15u));
    }
  } else if constexpr (block_layout(T).elements == 32) {
    dequantize_block32<T>(b, out);
  } else {
    static_assert(block_layout(T).elements == 1,
                  "dequantize_block: type this header does not decode");
    out[0] = block_element<T>(b, 0);
  }
}

// Row of `cols` elements of T (a whole number of blocks) to f32.
template <uint32_t T>
SPECD_BLOCK_FN void dequantize_row_of(const uint8_t* row, int64_t cols, float* out) {
  constexpr BlockLayout l = block_layout(T);
  if constexpr (T == kF32) {
    __builtin_memcpy(out, row, static_cast<uint64_t>(cols) * 4);
  } else if constexpr (l.elements == 1) {
    for (int64_t c = 0; c < cols; ++c) out[c] = block_element<T>(row + c * l.bytes, 0);
  } else {
    for (int64_t b = 0; b < cols / l.elements; ++b)
      dequantize_block<T>(row + b * l.bytes, out + b * l.elements);
  }
}

// Host code: calls f(Tag<T>{}) for the run-time type id `type` (a weight type of this header);
// returns false, calling nothing, for any other id.
template <uint32_t T>
struct Tag {
  static constexpr uint32_t value = T;
};

template <class F>
static inline bool visit_type(uint32_t type, F&& f) {
  switch (type) {
    case kF32:
      return f(Tag<kF32>{}), true;
    case kF16:
      return f(Tag<kF16>{}), true;
    case kBF16:
      return f(Tag<kBF16>{}), true;
    case kQ4_0:
      return f(Tag<kQ4_0>{}), true;
    case kQ4_1:
      return f(Tag<kQ4_1>{}), true;
    case kQ5_0:
      return f(Tag<kQ5_0>{}), true;
    case kQ5_1:
      return f(Tag<kQ5_1>{}), true;
    case kQ8_0:
      return f(Tag<kQ8_0>{}), true;
    case kQ2_K:
      return f(Tag<kQ2_K>{}), true;
    case kQ3_K:
      return f(Tag<kQ3_K>{}), true;
    case kQ4_K:
      return f(Tag<kQ4_K>{}), true;
    case kQ5_K:
      return f(Tag<kQ5_K>{}), true;
    case kQ6_K:
      return f(Tag<kQ6_K>{}), true;
    case kIQ4_NL:
      return f(Tag<kIQ4_NL>{}), true;
    case kIQ4_XS:
      return f(Tag<kIQ4_XS>{}), true;
    case kMXFP4:
      return f(Tag<kMXFP4>{}), true;
    default:
      return false;
  }
}

// Host code: row of `cols` elements of run-time type `type` to f32; false for an unknown type.
static inline bool dequantize_row(uint32_t type, const uint8_t* row, int64_t cols, float* out) {
  return visit_type(type,
                    [&](auto tag) { dequantize_row_of<decltype(tag)::value>(row, cols, out); });
}

}  // namespace specd::ggml
