// KV cache rows in f16 or q8_0 (a pool's dtype, [engine] kv_type) for the CPU backend: written
// from f32 rows by set_rows, read back as f32 by attention.
//
// Encoding is ggml's: f16 rounded to nearest even (the SDK's ggml::f32_to_f16; with F16C or
// AVX-512 the hardware conversion, which gives the same bits on every input), q8_0 blocks as
// llama.cpp's quantize_row_q8_0_ref (ggml::quantize_q8_0_block). Decoding is exact: a half
// is an f32, and d·q of a q8_0 block (an 11-bit d times an 8-bit q) is one exact f32 product,
// so SIMD and scalar decoders give the same floats and attention over decoded rows keeps its
// bits definition (the f32 one, over these values).
//
// Thread rules: pure functions of their arguments.
#pragma once

#include <cstdint>

#include "specd/backend.h"

namespace specd::cpu {

// Encodes `n` f32 values (n a multiple of 32 for q8_0) as `dtype` (f16 or q8_0) at dst.
void encode_kv_row(const float* src, int64_t n, specd_dtype dtype, uint8_t* dst);

// Decodes `n` values (a head's slice: n a multiple of 32 for q8_0, starting on a block) of
// `dtype` (f16 or q8_0) at src into f32 dst.
void decode_kv_row(const uint8_t* src, int64_t n, specd_dtype dtype, float* dst);

// Byte offset of element `col` (a multiple of 32 for q8_0) in a row of `dtype`.
int64_t kv_byte_offset(specd_dtype dtype, int64_t col);

}  // namespace specd::cpu
