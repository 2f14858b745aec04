// Weight precision as a bench axis: a copy of a GGUF model with its matrices stored under a
// weight preset (llama.cpp's Q4_K_M, Q8_0, ...: bench/weight_presets.hpp), everything else
// (metadata, tokenizer, norms) unchanged, written at bench time next to the reports or into
// a models folder.
#pragma once

#include <string>

#include "bench/weight_presets.hpp"
#include "gguf/ggml_types.hpp"

namespace specd::bench {

// Converts every matrix and expert stack (2-D and 3-D tensors but the router: see
// preset_converts) of a decodable type (f32, f16, bf16, any quantized type of
// ggml_blocks.hpp) to the type the preset picks for it (its row length decides the
// fallback); general.file_type becomes the preset's. Returns how many tensors were
// converted. Throws Error naming a file that cannot be read/written.
size_t write_weight_copy(const std::string& in, const std::string& out, const WeightPreset& preset);

// The same with a preset named by its base type: kQ4_K is q4_K_M, kQ5_K q5_K_M, kQ3_K
// q3_K_M, any other type the preset of its name.
size_t write_weight_copy(const std::string& in, const std::string& out, GgmlType type);

// The same, unless `out` already holds this copy: a side file `out`.spec records the source
// (path, size, modification time) and the preset. Returns true when it wrote the copy.
bool ensure_weight_copy(const std::string& in, const std::string& out, const WeightPreset& preset);

// The types of a model's matrices and expert stacks, most common first: "q4_K ×21, q6_K ×6,
// q5_0 ×4". For reports: what a preset became after its per-tensor rules and fallbacks.
std::string matrix_type_summary(const std::string& model);

}  // namespace specd::bench
