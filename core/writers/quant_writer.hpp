// Writing every quantized weight type specd decodes (llama.cpp's block layouts, as the SDK's
// specd/cpp/ggml_blocks.hpp decodes them) from f32 values: the GGUF tooling's quantizers,
// used to build quantized copies and constructed models for benchmarks. Each block is fit
// by round-to-nearest from its absolute maximum (symmetric types) or its min and max (types
// with a min), not by llama.cpp's search for the best scales: the file layout is identical,
// the rounding error a little larger.
#pragma once

#include <cstdint>

#include "gguf/ggml_types.hpp"

namespace specd {

// True for the types quantize_values writes: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0,
// q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, mxfp4.
bool ggml_writable(GgmlType type);

// n values (a whole number of the type's blocks) to n / block elements × block bytes at
// `out`. Throws Error for a type ggml_writable refuses or a partial block.
void quantize_values(GgmlType type, const float* x, void* out, int64_t n);

}  // namespace specd
