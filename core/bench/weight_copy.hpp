// Weight precision as a bench axis: a copy of a GGUF model with its matrices stored in
// another type (f16 → q8_0, or back), everything else (metadata, tokenizer, norms)
// unchanged, written at bench time next to the reports or into a temp folder.
#pragma once

#include <string>

#include "gguf/ggml_types.hpp"

namespace specd::bench {

// Converts every 2-D f32/f16/bf16/q8_0 tensor whose rows fit the type's blocks; returns
// how many tensors were converted. Throws Error naming a file that cannot be read/written.
size_t write_weight_copy(const std::string& in, const std::string& out, GgmlType type);

}  // namespace specd::bench
