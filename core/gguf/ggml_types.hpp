// ggml tensor element types as stored in GGUF files, their block layouts (as in llama.cpp's
// ggml.c type traits) and the scalar conversions the reader, writer and tests need.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "specd/cpp/ggml_blocks.hpp"

namespace specd {

// The ggml types as stored in GGUF files; ids from the SDK's one list (ggml_blocks.hpp).
enum class GgmlType : uint32_t {
  kF32 = ggml::kF32,
  kF16 = ggml::kF16,
  kQ4_0 = ggml::kQ4_0,
  kQ4_1 = ggml::kQ4_1,
  kQ5_0 = ggml::kQ5_0,
  kQ5_1 = ggml::kQ5_1,
  kQ8_0 = ggml::kQ8_0,
  kQ8_1 = ggml::kQ8_1,
  kQ2_K = ggml::kQ2_K,
  kQ3_K = ggml::kQ3_K,
  kQ4_K = ggml::kQ4_K,
  kQ5_K = ggml::kQ5_K,
  kQ6_K = ggml::kQ6_K,
  kQ8_K = ggml::kQ8_K,
  kIQ4_NL = ggml::kIQ4_NL,
  kIQ4_XS = ggml::kIQ4_XS,
  kI8 = ggml::kI8,
  kI16 = ggml::kI16,
  kI32 = ggml::kI32,
  kI64 = ggml::kI64,
  kF64 = ggml::kF64,
  kBF16 = ggml::kBF16,
  kMXFP4 = ggml::kMXFP4,
};

struct GgmlTypeInfo {
  const char* name;
  uint32_t block_size;  // elements per block
  uint32_t type_size;   // bytes per block
};

// Layout of a known type, or nullopt for ids this build does not understand.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t type_id);
const char* ggml_type_name(GgmlType type);
// Bytes of a row of n elements; n must be a multiple of the block size.
size_t ggml_row_size(GgmlType type, int64_t n);

constexpr size_t kQ8_0BlockSize = 32;
constexpr size_t kQ8_0BlockBytes = 2 + kQ8_0BlockSize;

uint16_t f32_to_f16(float value);  // round to nearest even, overflow to inf, keeps NaN
float f16_to_f32(uint16_t value);
uint16_t f32_to_bf16(float value);  // round to nearest even, keeps NaN quiet
float bf16_to_f32(uint16_t value);

// q8_0: per 32 values an fp16 scale d = amax / 127 then 32 int8 q = round(x / d).
// n must be a multiple of 32; out holds n / 32 * 34 bytes.
void quantize_q8_0(const float* x, void* out, int64_t n);
void dequantize_q8_0(const void* in, float* y, int64_t n);

// True for the weight types specd decodes (f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0,
// q2_K..q6_K, iq4_nl, iq4_xs, mxfp4): those of the SDK's specd/cpp/ggml_blocks.hpp.
bool ggml_decodable(GgmlType type);
// n values of `type` (a whole number of blocks) to f32, bit-identical to llama.cpp's gguf-py
// dequantization; throws for a type that is not decodable or a partial block.
void dequantize_row(GgmlType type, const void* in, float* y, int64_t n);

}  // namespace specd
