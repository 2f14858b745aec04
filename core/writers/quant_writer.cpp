#include "writers/quant_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "writers/kquant_writer.hpp"

namespace specd {
namespace {

// The 16 levels of iq4_nl / iq4_xs (llama.cpp's kvalues_iq4nl; ggml_blocks.hpp iq4_level).
constexpr int kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                1,    13,   25,  38,  53,  69,  89,  113};

int clamp_round(float v, int lo, int hi) {
  if (!std::isfinite(v)) return 0;
  return std::min(hi, std::max(lo, static_cast<int>(std::lround(v))));
}

// Stores v as binary16 and returns the value the decoder will read back.
float put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
  return f16_to_f32(h);
}

void put_u16(uint8_t* p, uint16_t v) {
  std::memcpy(p, &v, 2);
}

void put_u32(uint8_t* p, uint32_t v) {
  std::memcpy(p, &v, 4);
}

// The value of largest magnitude, with its sign.
float signed_absmax(const float* x, int n) {
  float m = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(m)) m = x[i];
  return m;
}

// Scale d for symmetric levels q·d, q in [lo, hi] with |lo| > hi (q4_0, q5_0, q3_K): the
// largest-magnitude value maps to lo, as llama.cpp does (d = max / lo).
float symmetric_scale(const float* x, int n, int lo) {
  return signed_absmax(x, n) / static_cast<float>(lo);
}

// The nearest iq4 level index of x / d.
unsigned nearest_iq4(float x, float d) {
  if (d == 0) return 8;  // level 1 is the closest to zero after -10
  const float v = x / d;
  unsigned best = 0;
  float best_err = std::fabs(v - static_cast<float>(kIq4Levels[0]));
  for (unsigned q = 1; q < 16; ++q) {
    const float err = std::fabs(v - static_cast<float>(kIq4Levels[q]));
    if (err < best_err) best = q, best_err = err;
  }
  return best;
}

// 32-element blocks: nibble of element t at qs[t & 15], low half for t < 16.
void put_nibble32(uint8_t* qs, int t, unsigned q) {
  qs[t & 15] |= static_cast<uint8_t>((q & 15u) << (4 * (t >> 4)));
}

void quantize_q4_0(const float* x, uint8_t* b) {  // 18 B: d, qs[16]
  const float d = put_f16(b, symmetric_scale(x, 32, -8));
  std::memset(b + 2, 0, 16);
  for (int t = 0; t < 32; ++t)
    put_nibble32(b + 2, t, static_cast<unsigned>(d != 0 ? clamp_round(x[t] / d, -8, 7) + 8 : 8));
}

void quantize_q5_0(const float* x, uint8_t* b) {  // 22 B: d, qh, qs[16]
  const float d = put_f16(b, symmetric_scale(x, 32, -16));
  uint32_t qh = 0;
  std::memset(b + 6, 0, 16);
  for (int t = 0; t < 32; ++t) {
    const unsigned q = static_cast<unsigned>(d != 0 ? clamp_round(x[t] / d, -16, 15) + 16 : 16);
    put_nibble32(b + 6, t, q);
    qh |= ((q >> 4) & 1u) << t;
  }
  put_u32(b + 2, qh);
}

// q4_1 / q5_1: x = d·q + m, q in [0, 2^bits − 1].
void quantize_with_min32(const float* x, uint8_t* b, int bits) {
  const float lo = *std::min_element(x, x + 32), hi = *std::max_element(x, x + 32);
  const int top = (1 << bits) - 1;
  const float d = put_f16(b, (hi - lo) / static_cast<float>(top));
  const float m = put_f16(b + 2, lo);
  uint8_t* qs = b + (bits == 5 ? 8 : 4);
  std::memset(qs, 0, 16);
  uint32_t qh = 0;
  for (int t = 0; t < 32; ++t) {
    const unsigned q = static_cast<unsigned>(d > 0 ? clamp_round((x[t] - m) / d, 0, top) : 0);
    put_nibble32(qs, t, q);
    qh |= ((q >> 4) & 1u) << t;
  }
  if (bits == 5) put_u32(b + 4, qh);
}

void quantize_iq4_nl(const float* x, uint8_t* b) {  // 18 B: d, qs[16]
  const float d = put_f16(b, symmetric_scale(x, 32, -127));
  std::memset(b + 2, 0, 16);
  for (int t = 0; t < 32; ++t) put_nibble32(b + 2, t, nearest_iq4(x[t], d));
}

// mxfp4, 17 B: e, qs[16]. As llama.cpp's reference quantizer: the scale exponent e =
// floor(log2(amax)) - 2 + 127 (0 for a block of zeros), so that amax / 2^(e - 127) lies in
// [4, 8) and the largest level 6 (12 doubled) covers it up to rounding, then each value's
// nearest level (the first of two equally near).
void quantize_mxfp4(const float* x, uint8_t* b) {
  float amax = 0;
  for (int t = 0; t < 32; ++t) amax = std::max(amax, std::fabs(x[t]));
  const float exponent = amax > 0 ? std::floor(std::log2(amax)) - 2 + 127 : 0;
  // Clamped: ggml converts out-of-range exponents (amax below 2^-125) without a defined result.
  b[0] = static_cast<uint8_t>(std::clamp(exponent, 0.0f, 255.0f));
  const float d = ggml::e8m0_half(b[0]);
  std::memset(b + 1, 0, 16);
  for (int t = 0; t < 32; ++t) {
    unsigned best = 0;
    float best_err = std::fabs(static_cast<float>(ggml::mxfp4_level(0)) * d - x[t]);
    for (unsigned q = 1; q < 16; ++q) {
      const float err = std::fabs(static_cast<float>(ggml::mxfp4_level(q)) * d - x[t]);
      if (err < best_err) {
        best = q;
        best_err = err;
      }
    }
    put_nibble32(b + 1, t, best);
  }
}

// q2_K, 84 B: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin; per 16
// elements x = (d·sc)·q − dmin·m, q in 0..3.
void quantize_q2_K(const float* x, uint8_t* b) {
  float scale[16], min[16];
  for (int j = 0; j < 16; ++j) {
    const float* s = x + 16 * j;
    const float lo = std::min(0.0f, *std::min_element(s, s + 16));
    const float hi = *std::max_element(s, s + 16);
    scale[j] = (hi - lo) / 3.0f;
    min[j] = -lo;
  }
  const float d = put_f16(b + 80, *std::max_element(scale, scale + 16) / 15.0f);
  const float dmin = put_f16(b + 82, *std::max_element(min, min + 16) / 15.0f);
  std::memset(b + 16, 0, 64);
  for (int j = 0; j < 16; ++j) {
    const int sc = d > 0 ? clamp_round(scale[j] / d, 0, 15) : 0;
    const int m = dmin > 0 ? clamp_round(min[j] / dmin, 0, 15) : 0;
    b[j] = static_cast<uint8_t>(sc | (m << 4));
    const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
    for (int t = 0; t < 16; ++t) {
      const int i = 16 * j + t;
      const int q = dl > 0 ? clamp_round((x[i] + ml) / dl, 0, 3) : 0;
      b[16 + (i >> 7) * 32 + (i & 31)] |= static_cast<uint8_t>(q << (2 * ((i >> 5) & 3)));
    }
  }
}

// q3_K, 110 B: hmask[32], qs[64], scales[12] (16 × 6 bits, s − 32), d; per 16 elements
// x = (d·(s − 32))·q, q in −4..3 (low two bits in qs, the third in hmask, set = no −4).
void quantize_q3_K(const float* x, uint8_t* b) {
  float ideal[16], amax = 0;
  for (int j = 0; j < 16; ++j) {
    ideal[j] = symmetric_scale(x + 16 * j, 16, -4);
    amax = std::max(amax, std::fabs(ideal[j]));
  }
  const float d = put_f16(b + 108, amax / 31.0f);
  std::memset(b, 0, 108);
  uint8_t* scales = b + 96;
  for (int j = 0; j < 16; ++j) {
    const int ls = d > 0 ? clamp_round(ideal[j] / d, -32, 31) : 0;
    const unsigned s = static_cast<unsigned>(ls + 32);
    scales[j < 8 ? j : j - 8] |= static_cast<uint8_t>((s & 15u) << (j < 8 ? 0 : 4));
    scales[8 + (j & 3)] |= static_cast<uint8_t>((s >> 4) << (2 * (j >> 2)));
    const float dl = d * static_cast<float>(ls);
    for (int t = 0; t < 16; ++t) {
      const int i = 16 * j + t;
      const unsigned v = static_cast<unsigned>((dl != 0 ? clamp_round(x[i] / dl, -4, 3) : 0) + 4);
      b[32 + (i >> 7) * 32 + (i & 31)] |= static_cast<uint8_t>((v & 3u) << (2 * ((i >> 5) & 3)));
      b[i & 31] |= static_cast<uint8_t>((v >> 2) << (i >> 5));
    }
  }
}

// q5_K, 176 B: d, dmin, scales[12] (8 × 6-bit scale and min, packed as q4_K's), qh[32],
// qs[128]; per 32 elements x = (d·sc)·q − dmin·m, q in 0..31.
void quantize_q5_K(const float* x, uint8_t* b) {
  float scale[8], min[8];
  for (int j = 0; j < 8; ++j) {
    const float* s = x + 32 * j;
    const float lo = std::min(0.0f, *std::min_element(s, s + 32));
    const float hi = *std::max_element(s, s + 32);
    scale[j] = (hi - lo) / 31.0f;
    min[j] = -lo;
  }
  const float d = put_f16(b, *std::max_element(scale, scale + 8) / 63.0f);
  const float dmin = put_f16(b + 2, *std::max_element(min, min + 8) / 63.0f);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0 ? clamp_round(scale[j] / d, 0, 63) : 0;
    m[j] = dmin > 0 ? clamp_round(min[j] / dmin, 0, 63) : 0;
  }
  uint8_t* s = b + 4;  // ggml_blocks k_scale_min
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
  std::memset(b + 16, 0, 160);
  for (int i = 0; i < 256; ++i) {
    const int j = i / 32;
    const float dl = d * static_cast<float>(sc[j]), ml = dmin * static_cast<float>(m[j]);
    const int q = dl > 0 ? clamp_round((x[i] + ml) / dl, 0, 31) : 0;
    b[48 + (i >> 6) * 32 + (i & 31)] |= static_cast<uint8_t>((q & 15) << (4 * ((i >> 5) & 1)));
    b[16 + (i & 31)] |= static_cast<uint8_t>(((q >> 4) & 1) << (i >> 5));
  }
}

// iq4_xs, 136 B: d, scales_h (u16, 2 bits per sub-block), scales_l[4] (4 bits), qs[128];
// per 32 elements x = (d·(s − 32))·level[q].
void quantize_iq4_xs(const float* x, uint8_t* b) {
  float ideal[8], amax = 0;
  for (int j = 0; j < 8; ++j) {
    ideal[j] = symmetric_scale(x + 32 * j, 32, -127);
    amax = std::max(amax, std::fabs(ideal[j]));
  }
  const float d = put_f16(b, amax / 31.0f);
  std::memset(b + 2, 0, 134);
  uint16_t scales_h = 0;
  for (int j = 0; j < 8; ++j) {
    const int ls = d > 0 ? clamp_round(ideal[j] / d, -32, 31) : 0;
    const unsigned s = static_cast<unsigned>(ls + 32);
    b[4 + j / 2] |= static_cast<uint8_t>((s & 15u) << (4 * (j & 1)));
    scales_h = static_cast<uint16_t>(scales_h | ((s >> 4) << (2 * j)));
    const float dl = d * static_cast<float>(ls);
    for (int t = 0; t < 32; ++t) {
      const int i = 32 * j + t;
      const unsigned q = nearest_iq4(x[i], dl);
      b[8 + (i >> 5) * 16 + (i & 15)] |= static_cast<uint8_t>(q << (4 * ((i >> 4) & 1)));
    }
  }
  put_u16(b + 2, scales_h);
}

}  // namespace

bool ggml_writable(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_0:
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
    case GgmlType::kIQ4_NL:
    case GgmlType::kIQ4_XS:
    case GgmlType::kMXFP4:
      return true;
    default:
      return false;
  }
}

void quantize_values(GgmlType type, const float* x, void* out, int64_t n) {
  const auto info = ggml_type_info(static_cast<uint32_t>(type));
  if (!info || !ggml_writable(type))
    throw Error(std::string("quantize: cannot write type ") +
                (info ? info->name : std::to_string(static_cast<uint32_t>(type)).c_str()));
  if (n % info->block_size)
    throw Error(std::string("quantize: ") + std::to_string(n) + " values are not a whole " +
                "number of " + info->name + " blocks of " + std::to_string(info->block_size));
  auto* dst = static_cast<uint8_t*>(out);
  const int64_t blocks = n / info->block_size;
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(dst, x, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      for (int64_t k = 0; k < n; ++k)
        put_u16(dst + 2 * k, type == GgmlType::kF16 ? f32_to_f16(x[k]) : f32_to_bf16(x[k]));
      return;
    case GgmlType::kQ8_0:
      quantize_q8_0(x, dst, n);
      return;
    case GgmlType::kQ4_K:
      quantize_q4_K(x, dst, n);
      return;
    case GgmlType::kQ6_K:
      quantize_q6_K(x, dst, n);
      return;
    default:
      break;
  }
  const size_t bs = info->block_size, bytes = info->type_size;
  for (int64_t k = 0; k < blocks; ++k) {
    const float* xb = x + k * bs;
    uint8_t* b = dst + k * bytes;
    switch (type) {
      case GgmlType::kQ4_0:
        quantize_q4_0(xb, b);
        break;
      case GgmlType::kQ4_1:
        quantize_with_min32(xb, b, 4);
        break;
      case GgmlType::kQ5_0:
        quantize_q5_0(xb, b);
        break;
      case GgmlType::kQ5_1:
        quantize_with_min32(xb, b, 5);
        break;
      case GgmlType::kIQ4_NL:
        quantize_iq4_nl(xb, b);
        break;
      case GgmlType::kMXFP4:
        quantize_mxfp4(xb, b);
        break;
      case GgmlType::kQ2_K:
        quantize_q2_K(xb, b);
        break;
      case GgmlType::kQ3_K:
        quantize_q3_K(xb, b);
        break;
      case GgmlType::kQ5_K:
        quantize_q5_K(xb, b);
        break;
      default:  // kIQ4_XS: the last writable type
        quantize_iq4_xs(xb, b);
        break;
    }
  }
}

}  // namespace specd
