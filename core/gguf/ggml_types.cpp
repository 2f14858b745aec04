#include "gguf/ggml_types.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.hpp"

namespace specd {

namespace {

struct TypeEntry {
  uint32_t id;
  GgmlTypeInfo info;
};

// Block sizes and bytes per block follow ggml's type_traits.
constexpr TypeEntry kTypes[] = {
    {0, {"f32", 1, 4}},
    {1, {"f16", 1, 2}},
    {2, {"q4_0", 32, 2 + 16}},
    {3, {"q4_1", 32, 4 + 16}},
    {6, {"q5_0", 32, 2 + 4 + 16}},
    {7, {"q5_1", 32, 4 + 4 + 16}},
    {8, {"q8_0", 32, 2 + 32}},
    {9, {"q8_1", 32, 4 + 32}},
    {10, {"q2_K", 256, 84}},
    {11, {"q3_K", 256, 110}},
    {12, {"q4_K", 256, 144}},
    {13, {"q5_K", 256, 176}},
    {14, {"q6_K", 256, 210}},
    {15, {"q8_K", 256, 292}},
    {24, {"i8", 1, 1}},
    {25, {"i16", 1, 2}},
    {26, {"i32", 1, 4}},
    {27, {"i64", 1, 8}},
    {28, {"f64", 1, 8}},
    {30, {"bf16", 1, 2}},
};

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t type_id) {
  for (const auto& t : kTypes) {
    if (t.id == type_id) return t.info;
  }
  return std::nullopt;
}

const char* ggml_type_name(GgmlType type) {
  auto info = ggml_type_info(static_cast<uint32_t>(type));
  return info ? info->name : "unknown";
}

size_t ggml_row_size(GgmlType type, int64_t n) {
  auto info = ggml_type_info(static_cast<uint32_t>(type));
  if (!info)
    throw Error("ggml_row_size: unknown ggml type " + std::to_string(static_cast<uint32_t>(type)));
  if (n < 0 || n % info->block_size != 0) {
    throw Error(std::string("ggml_row_size: ") + std::to_string(n) +
                " elements is not a whole number of " + info->name + " blocks");
  }
  return static_cast<size_t>(n / info->block_size) * info->type_size;
}

uint16_t f32_to_f16(float value) {
  const uint32_t x = float_bits(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
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

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    const float f = std::ldexp(static_cast<float>(man), -24);
    return sign ? -f : f;
  }
  return bits_float(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t f32_to_bf16(float value) {
  const uint32_t x = float_bits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bf16_to_f32(uint16_t value) {
  return bits_float(static_cast<uint32_t>(value) << 16);
}

void quantize_q8_0(const float* x, void* out, int64_t n) {
  auto* dst = static_cast<uint8_t*>(out);
  for (int64_t b = 0; b < n / static_cast<int64_t>(kQ8_0BlockSize); ++b) {
    const float* xb = x + b * kQ8_0BlockSize;
    float amax = 0.0f;
    for (size_t j = 0; j < kQ8_0BlockSize; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    uint8_t* block = dst + b * kQ8_0BlockBytes;
    std::memcpy(block, &dh, 2);
    for (size_t j = 0; j < kQ8_0BlockSize; ++j) {
      const auto q = static_cast<int8_t>(std::lround(xb[j] * id));
      std::memcpy(block + 2 + j, &q, 1);
    }
  }
}

void dequantize_q8_0(const void* in, float* y, int64_t n) {
  const auto* src = static_cast<const uint8_t*>(in);
  for (int64_t b = 0; b < n / static_cast<int64_t>(kQ8_0BlockSize); ++b) {
    const uint8_t* block = src + b * kQ8_0BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, block, 2);
    const float d = f16_to_f32(dh);
    for (size_t j = 0; j < kQ8_0BlockSize; ++j) {
      int8_t q;
      std::memcpy(&q, block + 2 + j, 1);
      y[b * kQ8_0BlockSize + j] = d * q;
    }
  }
}

}  // namespace specd
