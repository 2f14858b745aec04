// Weight precision as a bench axis: a copy of a GGUF model with its matrices stored in
// another type (f16 → q8_0, or back), everything else (metadata, tokenizer, norms)
// unchanged, written at bench time next to the reports or into a temp folder.
#pragma once

#include <string>

#include "gguf/ggml_types.hpp"

namespace specd::bench {

// Converts every 2-D tensor of a decodable type (f32, f16, bf16, any quantized type of
// ggml_blocks.hpp) whose rows fit the type's blocks; kQ4_K means llama.cpp's Q4_K_M mix
// (q4_K, q6_K for the tensors it picks). Returns how many tensors were converted. Throws Error
// naming a file that cannot be read/written.
size_t write_weight_copy(const std::string& in, const std::string& out, GgmlType type);

}  // namespace specd::bench
