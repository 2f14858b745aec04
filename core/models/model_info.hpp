// What a loaded model is: hyperparameters from its GGUF metadata and where it came from.
#pragma once

#include <cstdint>
#include <string>

namespace specd {

struct ModelInfo {
  std::string name;          // general.name ("" when absent)
  std::string path;          // the GGUF file
  std::string architecture;  // general.architecture, "llama"
  int32_t vocab_size = 0;    // rows of token_embd.weight
  int32_t n_ctx = 0;         // llama.context_length (trained context)
  int32_t n_embd = 0;        // d
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;  // llama.attention.key_length or n_embd / n_head
  int32_t n_ff = 0;      // llama.feed_forward_length
  int32_t n_rot = 0;     // llama.rope.dimension_count (default head_dim)
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied_output = false;  // no output.weight: logits use token_embd.weight
  std::string weight_type;   // type of the attention/FFN matrices, e.g. "f16"
  int64_t n_params = 0;      // elements of all tensors
};

}  // namespace specd
