#include "gguf/ggml_types.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.hpp"
#include "specd/cpp/ggml_blocks.hpp"

namespace specd {

namespace {

struct TypeEntry {
  uint32_t id;
  GgmlTypeInfo info;
};

// Block sizes and bytes per block follow ggml's type_traits; the types specd decodes take
// theirs from the SDK's ggml_blocks.hpp, the one decoding source.
constexpr GgmlTypeInfo decodable(const char* name, uint32_t id) {
  return {name, ggml::block_layout(id).elements, ggml::block_layout(id).bytes};
}

constexpr TypeEntry kTypes[] = {
    {0, decodable("f32", ggml::kF32)},
    {1, decodable("f16", ggml::kF16)},
    {2, decodable("q4_0", ggml::kQ4_0)},
    {3, decodable("q4_1", ggml::kQ4_1)},
    {6, decodable("q5_0", ggml::kQ5_0)},
    {7, decodable("q5_1", ggml::kQ5_1)},
    {8, decodable("q8_0", ggml::kQ8_0)},
    {9, {"q8_1", 32, 4 + 32}},
    {10, decodable("q2_K", ggml::kQ2_K)},
    {11, decodable("q3_K", ggml::kQ3_K)},
    {12, decodable("q4_K", ggml::kQ4_K)},
    {13, decodable("q5_K", ggml::kQ5_K)},
    {14, decodable("q6_K", ggml::kQ6_K)},
    {15, {"q8_K", 256, 292}},
    {20, decodable("iq4_nl", ggml::kIQ4_NL)},
    {23, decodable("iq4_xs", ggml::kIQ4_XS)},
    {24, {"i8", 1, 1}},
    {25, {"i16", 1, 2}},
    {26, {"i32", 1, 4}},
    {27, {"i64", 1, 8}},
    {28, {"f64", 1, 8}},
    {30, decodable("bf16", ggml::kBF16)},
    {39, decodable("mxfp4", ggml::kMXFP4)},
};

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
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
  return ggml::f32_to_f16(value);
}

float f16_to_f32(uint16_t h) {
  return ggml::f16_to_f32(h);
}

uint16_t f32_to_bf16(float value) {
  const uint32_t x = float_bits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bf16_to_f32(uint16_t value) {
  return ggml::bf16_to_f32(value);
}

bool ggml_decodable(GgmlType type) {
  return ggml::block_layout(static_cast<uint32_t>(type)).elements != 0;
}

void dequantize_row(GgmlType type, const void* in, float* y, int64_t n) {
  const auto id = static_cast<uint32_t>(type);
  const uint32_t block = ggml::block_layout(id).elements;
  if (block == 0)
    throw Error(std::string("dequantize_row: type ") + ggml_type_name(type) + " is not decoded");
  if (n < 0 || n % block != 0)
    throw Error("dequantize_row: " + std::to_string(n) + " elements is not a whole number of " +
                ggml_type_name(type) + " blocks");
  ggml::dequantize_row(id, static_cast<const uint8_t*>(in), n, y);
}

void quantize_q8_0(const float* x, void* out, int64_t n) {
  auto* dst = static_cast<uint8_t*>(out);
  for (int64_t b = 0; b < n / static_cast<int64_t>(kQ8_0BlockSize); ++b)
    ggml::quantize_q8_0_block(x + b * kQ8_0BlockSize, dst + b * kQ8_0BlockBytes);
}

void dequantize_q8_0(const void* in, float* y, int64_t n) {
  dequantize_row(GgmlType::kQ8_0, in, y, n);
}

}  // namespace specd
