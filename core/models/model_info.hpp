// What a loaded model is: hyperparameters from its GGUF metadata and where it came from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace specd {

// YaRN's RoPE parameters (backend.h, specd_rope_params, with ggml's rope_ext semantics);
// ext_factor 0: no YaRN.
struct Yarn {
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int32_t n_ctx_orig = 0;  // the context YaRN stretches from
};

struct ModelInfo {
  std::string name;          // general.name ("" when absent)
  std::string path;          // the GGUF file
  std::string architecture;  // general.architecture: "llama", "qwen2", ... (its key prefix)
  int32_t vocab_size = 0;    // rows of token_embd.weight
  int32_t n_ctx = 0;         // <arch>.context_length (trained context)
  int32_t n_embd = 0;        // d
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;  // <arch>.attention.key_length or n_embd / n_head
  int32_t n_ff = 0;      // <arch>.feed_forward_length
  int32_t n_rot = 0;     // <arch>.rope.dimension_count (default head_dim)
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  uint32_t rope_mode = 0;        // SPECD_ROPE_NORMAL or SPECD_ROPE_NEOX (the architecture's)
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor (linear or YaRN scaling)
  Yarn yarn;                     // rope.scaling.type "yarn"
  bool rope_freqs = false;       // rope_freqs.weight divides the rope frequencies
  bool tied_output = false;      // no output.weight: logits use token_embd.weight
  std::string weight_type;       // type of the attention/FFN matrices, e.g. "f16"
  int64_t n_params = 0;          // elements of all tensors
  // A hybrid model (architecture.hpp): which layers are recurrent (gated DeltaNet), their
  // shape (<arch>.ssm.*: conv taps, key heads, value heads, head size), and the MTP layers
  // (<arch>.nextn_predict_layers) that follow the n_layer trunk layers in the file.
  std::vector<bool> recurrent;  // per layer; empty for a model without recurrent layers
  int32_t ssm_conv = 0, ssm_key_heads = 0, ssm_value_heads = 0, ssm_head_dim = 0;
  int32_t n_nextn = 0;
  bool hybrid() const { return !recurrent.empty(); }
  // A mixture of experts: experts per layer (<arch>.expert_count; 0 for a dense model), those
  // each token goes through (expert_used_count) and an expert's hidden size
  // (expert_feed_forward_length).
  int32_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  int32_t n_ff_shared = 0;  // a shared expert's size (expert_shared_feed_forward_length), or 0
  // Sliding-window attention: the layers that attend only the last `sliding_window` keys
  // (<arch>.attention.sliding_window); empty when no layer does.
  std::vector<bool> sliding;
  int32_t sliding_window = 0;
};

}  // namespace specd
