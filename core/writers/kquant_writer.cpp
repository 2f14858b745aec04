#include "writers/kquant_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gguf/ggml_types.hpp"

namespace specd {
namespace {

int clamp_round(float v, int lo, int hi) {
  return std::min(hi, std::max(lo, static_cast<int>(std::lround(v))));
}

void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

}  // namespace

void quantize_q4_K(const float* x, void* out, int64_t n) {
  auto* dst = static_cast<uint8_t*>(out);
  for (int64_t blk = 0; blk < n / 256; ++blk, x += 256, dst += 144) {
    float scale[8], min[8];  // x ≈ scale · q − min, q in 0..15
    for (int j = 0; j < 8; ++j) {
      const float* s = x + 32 * j;
      float lo = std::min(0.0f, *std::min_element(s, s + 32));
      float hi = *std::max_element(s, s + 32);
      scale[j] = (hi - lo) / 15.0f;
      min[j] = -lo;
    }
    const float d = *std::max_element(scale, scale + 8) / 63.0f;
    const float dmin = *std::max_element(min, min + 8) / 63.0f;
    put_f16(dst, d);
    put_f16(dst + 2, dmin);
    const float dq = f16_to_f32(f32_to_f16(d)), dminq = f16_to_f32(f32_to_f16(dmin));
    int sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = dq > 0 ? clamp_round(scale[j] / dq, 0, 63) : 0;
      m[j] = dminq > 0 ? clamp_round(min[j] / dminq, 0, 63) : 0;
    }
    uint8_t* s = dst + 4;  // the 12 packed 6-bit scales and mins (ggml_blocks k_scale_min)
    for (int j = 0; j < 4; ++j) {
      s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
      s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
      s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
    uint8_t* qs = dst + 16;
    std::memset(qs, 0, 128);
    for (int i = 0; i < 256; ++i) {
      const int j = i / 32;
      const float dl = dq * static_cast<float>(sc[j]), ml = dminq * static_cast<float>(m[j]);
      const int q = dl > 0 ? clamp_round((x[i] + ml) / dl, 0, 15) : 0;
      qs[(i >> 6) * 32 + (i & 31)] |= static_cast<uint8_t>(q << (4 * ((i >> 5) & 1)));
    }
  }
}

void quantize_q6_K(const float* x, void* out, int64_t n) {
  auto* dst = static_cast<uint8_t*>(out);
  for (int64_t blk = 0; blk < n / 256; ++blk, x += 256, dst += 210) {
    float scale[16];  // x ≈ scale · q, q in -32..31
    float amax_all = 0;
    for (int j = 0; j < 16; ++j) {
      float amax = 0;
      for (int t = 0; t < 16; ++t) amax = std::max(amax, std::fabs(x[16 * j + t]));
      scale[j] = amax / 31.0f;
      amax_all = std::max(amax_all, scale[j]);
    }
    const float d = amax_all / 127.0f;
    put_f16(dst + 208, d);
    const float dq = f16_to_f32(f32_to_f16(d));
    int8_t sc[16];
    for (int j = 0; j < 16; ++j) {
      sc[j] = static_cast<int8_t>(dq > 0 ? clamp_round(scale[j] / dq, -128, 127) : 0);
      dst[192 + j] = static_cast<uint8_t>(sc[j]);
    }
    std::memset(dst, 0, 192);
    for (int i = 0; i < 256; ++i) {
      const float dl = dq * static_cast<float>(sc[i / 16]);
      const int q = (dl != 0 ? clamp_round(x[i] / dl, -32, 31) : 0) + 32;
      dst[(i >> 7) * 64 + (i & 63)] |= static_cast<uint8_t>((q & 15) << (4 * ((i >> 6) & 1)));
      dst[128 + (i >> 7) * 32 + (i & 31)] |= static_cast<uint8_t>((q >> 4) << (2 * ((i >> 5) & 3)));
    }
  }
}

}  // namespace specd
