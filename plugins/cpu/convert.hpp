// Scalar element conversions (exact for f16/bf16 -> f32, round to nearest even the other
// way) and the q8_0 block layout. The plugin links nothing from specd, so it keeps its own.
#pragma once

#include <cstdint>
#include <cstring>

namespace specd::cpu {

constexpr int64_t kQ8Block = 32;       // elements per q8_0 block
constexpr int64_t kQ8BlockBytes = 34;  // f16 scale + 32 int8

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline float bf16_to_f32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// One q8_0 block (34 bytes) to 32 floats: x = d * q, exact in f32.
inline void dequantize_q8_block(const uint8_t* block, float* out) {
  uint16_t dh;
  std::memcpy(&dh, block, 2);
  const float d = f16_to_f32(dh);
  const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
  for (int i = 0; i < kQ8Block; ++i) out[i] = d * static_cast<float>(q[i]);
}

}  // namespace specd::cpu
