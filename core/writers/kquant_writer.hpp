// Writing q4_K and q6_K blocks (llama.cpp's layouts, as ggml_blocks.hpp decodes them) from
// f32 values: the GGUF tooling's quantizers, used to build quantized constructed models for
// benchmarks. A plain per-sub-block min/max (q4_K) and absmax (q6_K) fit, not llama.cpp's
// search for the best scales: the file layout is identical, the rounding error a little
// larger. Every other writable type: gguf/quant_writer.hpp; which tensor gets which type
// under llama.cpp's presets: bench/weight_presets.hpp.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/ggml_types.hpp"

namespace specd {

// n values (a multiple of 256) to n / 256 blocks of 144 (q4_K) or 210 (q6_K) bytes.
void quantize_q4_K(const float* x, void* out, int64_t n);
void quantize_q6_K(const float* x, void* out, int64_t n);

}  // namespace specd
