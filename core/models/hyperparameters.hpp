// Checked reads of model hyperparameters from GGUF metadata, shared by the llama model and
// the draft heads. Each throws specd::Error naming the file and the key when a value is
// missing (where required), of the wrong type, or outside what a forward pass can use.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_reader.hpp"

namespace specd {

// An integer in [1, 2^30] (dimensions, counts, lengths); required.
int32_t positive_int_key(const GgufFile& f, const std::string& key);
// The same, or `fallback` when the key is absent.
int32_t positive_int_key_or(const GgufFile& f, const std::string& key, int32_t fallback);
// A finite float > 0 (rope base, norm epsilon), or `fallback` when the key is absent.
float positive_float_key_or(const GgufFile& f, const std::string& key, float fallback);

// The RoPE frequency scale of `<prefix>rope.scaling.*` as llama.cpp reads it: type "none"
// gives 1; "linear" (the default) gives 1 / factor (rope.scaling.factor, else the older
// rope.scale_linear; absent or 0 means no scaling). Other types (yarn, longrope, ...) and an
// attn_factor other than 1 throw naming the file and the key.
float rope_freq_scale(const GgufFile& f, const std::string& prefix);

}  // namespace specd
