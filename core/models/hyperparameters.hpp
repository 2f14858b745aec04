// Checked reads of model hyperparameters from GGUF metadata, shared by the llama model and
// the draft heads. Each throws specd::Error naming the file and the key when a value is
// missing (where required), of the wrong type, or outside what a forward pass can use.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_reader.hpp"
#include "models/architecture.hpp"
#include "models/model_info.hpp"

namespace specd {

// An integer in [1, 2^30] (dimensions, counts, lengths); required.
int32_t positive_int_key(const GgufFile& f, const std::string& key);
// The same, or `fallback` when the key is absent.
int32_t positive_int_key_or(const GgufFile& f, const std::string& key, int32_t fallback);
// A finite float > 0 (rope base, norm epsilon), or `fallback` when the key is absent.
float positive_float_key_or(const GgufFile& f, const std::string& key, float fallback);

struct RopeScaling {
  float freq_scale = 1.0f;
  Yarn yarn;
};

// `<prefix>rope.scaling.*` as llama.cpp reads it: type "none" gives no scaling; "linear" (the
// default) a frequency scale of 1 / factor (rope.scaling.factor, else the older
// rope.scale_linear; absent or 0 means no scaling); "yarn" that scale and YaRN with
// ext_factor 1, original_context_length (else n_ctx_train) and yarn_beta_fast / yarn_beta_slow
// (else 32 and 1), for a factor of at least 1. Other types (longrope, ...), an attn_factor
// other than 1 and the YaRN keys
// whose meaning differs by model (yarn_log_multiplier, yarn_ext_factor, yarn_attn_factor)
// throw naming the file and the key.
RopeScaling rope_scaling(const GgufFile& f, const std::string& prefix, int32_t n_ctx_train);

// <prefix>feed_forward_length: required for a dense FFN; a mixture of experts' file may leave
// it out or hold 0 (qwen35moe's do), which gives 0.
int32_t ffn_length(const GgufFile& f, const std::string& prefix, bool experts);

// The mixture of experts of a file of `arch` (which has experts): <prefix>expert_count (at
// most 4,096), expert_used_count (at most the count), expert_feed_forward_length (else
// n_ff / used, llama.cpp's default) and, with a shared expert,
// expert_shared_feed_forward_length (else n_ff); routed and activated as `arch` says. With
// n_ff 0 (no dense width) the two lengths are required.
MoeShape read_moe_shape(const GgufFile& f, const std::string& prefix, const Architecture& arch,
                        int32_t n_ff);

}  // namespace specd
