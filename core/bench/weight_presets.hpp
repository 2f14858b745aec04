// Weight precision as a bench axis: llama.cpp's file-type presets (llama-quantize's
// Q4_K_M, Q8_0, MXFP4_MOE, ...) and the type each tensor of a llama-layout model gets under
// one, as llama.cpp's llama_tensor_get_type picks it for llama-like models (dense, or
// mixtures of experts as qwen3moe) without an importance matrix: a base type, with attn_v,
// attn_output, ffn_down (the experts' ffn_down_exps too), attn_qkv and output.weight raised
// by the preset's rules, and a row length that does not fit the type's blocks falling back
// as llama-quantize does (q2_K, q3_K, iq4_xs -> iq4_nl; q4_K -> q5_0; q5_K -> q5_1;
// q6_K -> q8_0; then f16).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/ggml_types.hpp"

namespace specd::bench {

struct WeightPreset {
  std::string name;        // "q4_K_M"
  GgmlType base;           // the type most matrices get
  uint32_t file_type = 0;  // llama_ftype, for general.file_type
};

// Every preset name, in the order reports list them: f32, f16, bf16, q8_0, q6_K, q5_K_M,
// q5_K_S, q5_1, q5_0, q4_K_M, q4_K_S, q4_1, q4_0, iq4_xs, iq4_nl, mxfp4_moe, q3_K_L,
// q3_K_M, q3_K_S, q2_K.
const std::vector<std::string>& weight_preset_names();

// The preset of a name (case as listed; "q4_k_m" is accepted too). Throws UsageError
// listing the names for an unknown one.
WeightPreset weight_preset(const std::string& name);

// What the writer needs to know about a tensor to pick its type.
struct TensorShape {
  int64_t row_length = 0;  // ne[0]
  uint32_t n_dims = 2;     // 3: a stack of experts (ffn_*_exps)
  uint32_t n_layer = 0;    // the model's block count
  uint32_t n_gqa = 1;      // head_count / head_count_kv
  uint32_t n_expert = 0;   // expert_count (0: dense); llama.cpp has rules for 8 experts
};

// Whether llama-quantize converts `tensor` at all: matrices and expert stacks (2-D and 3-D),
// but not the router (ffn_gate_inp, kept f32 as the converters write it).
bool preset_converts(const std::string& tensor, const TensorShape& shape);

// The type `tensor` is written in under `preset`: what preset_converts leaves alone (norms,
// biases, the router) stays f32.
GgmlType preset_tensor_type(const WeightPreset& preset, const std::string& tensor,
                            const TensorShape& shape);

}  // namespace specd::bench
