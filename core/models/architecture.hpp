// The one place that says what each supported GGUF architecture is: its general.architecture
// name (also the prefix of its hyperparameter keys, "<name>.embedding_length"), its RoPE
// pairing, and which optional tensors and steps its decoder block has. Every architecture
// runs through the same model (LlamaModel) and the same block op sequence (DecoderBlock), in
// which each of these steps is optional. Adding an architecture is one file in
// architectures/ plus one line in architecture.cpp (docs/ADDING_AN_ARCHITECTURE.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gguf/gguf_reader.hpp"
#include "models/moe_ffn.hpp"

namespace specd {

// Whether a file of the architecture has a tensor (or tensor family).
enum class Presence : uint8_t { kAbsent, kOptional, kRequired };

struct Architecture {
  const char* name;    // general.architecture, and the prefix of its metadata keys
  uint32_t rope_mode;  // SPECD_ROPE_NORMAL (pairs 2j, 2j+1) or SPECD_ROPE_NEOX (j, j + n_rot/2)
  // The rest default to the plain llama block; a record names only where it departs from it.
  Presence qkv_bias = Presence::kAbsent;  // blk.N.attn_{q,k,v}.bias [out]: added after projecting
  Presence qk_norm =
      Presence::kAbsent;  // blk.N.attn_{q,k}_norm.weight [head_dim]: per-head RMSNorm
  // blk.N.attn_qkv.weight [d, q + 2 kv]: the rows of q, then k, then v in one tensor.
  // kOptional: either that or separate attn_q/k/v; kAbsent: separate tensors only.
  Presence fused_qkv = Presence::kAbsent;
  // blk.N.ffn_up.weight [d, 2 F] holds the gate's rows then the up rows; no ffn_gate.
  bool fused_gate_up = false;
  Presence rope_freqs =
      Presence::kAbsent;  // rope_freqs.weight [n_rot/2]: per-pair frequency divisors (Llama 3.1)
  // A hybrid of recurrent and attention layers (qwen35): every <name>.full_attention_interval-th
  // layer is gated attention (attn_q gives each head's q and then its gate; the attention output
  // is multiplied by sigmoid(gate)); the others are gated DeltaNet layers (ssm_* tensors,
  // recurrent state: recurrent_pool.hpp). The FFN norm is named post_attention_norm.
  bool hybrid = false;
  // The FFN's norm is blk.N.post_attention_norm.weight, not ffn_norm (qwen35, gpt-oss).
  bool post_attention_norm = false;
  // blk.N.attn_output.bias [d]: added after the output projection (gpt-oss).
  Presence output_bias = Presence::kAbsent;
  // blk.N.attn_sinks.weight [n_head]: one more term in each head's softmax (backend.h).
  Presence attention_sinks = Presence::kAbsent;
  // Sliding-window layers, llama.cpp's set_swa_pattern(period): layer l attends only the last
  // <name>.attention.sliding_window keys when l % period < period - 1 (period 2: the even
  // layers). 0: every layer attends every key.
  int32_t sliding_window_period = 0;
  // A mixture of experts (moe_ffn.hpp): every layer's FFN is blk.N.ffn_gate_inp.weight [d, E]
  // and ffn_{gate,up,down}_exps.weight [d, F_e, E] / [F_e, d, E], routed this way;
  // <name>.expert_count, expert_used_count and expert_feed_forward_length give E, the experts
  // per token and F_e. kNone: a dense FFN (a file with expert_count is refused).
  ExpertRouting experts = ExpertRouting::kNone;
  // The experts' activation, and whether the router and each expert's matrices have biases
  // (gpt-oss: ffn_gate_inp.bias [E], ffn_{gate,up}_exps.bias [F_e, E], ffn_down_exps.bias
  // [d, E]).
  ExpertActivation expert_activation = ExpertActivation::kSwiglu;
  bool expert_biases = false;
  // A shared expert beside the routed ones (qwen35moe): ffn_{gate,up,down}_shexp.weight, a
  // SwiGLU of <name>.expert_shared_feed_forward_length, its output scaled by
  // sigmoid(ffn_gate_inp_shexp.weight [d] . x) and added to the experts' sum.
  bool shared_expert = false;
};

// The architecture named `name`, or nullptr.
const Architecture* find_architecture(std::string_view name);
// "llama, qwen2, qwen3, phi3, ...": every supported name, in the registry's order.
std::string supported_architectures();

// Whether a model file carries MTP layers specd runs as a head (a hybrid, qwen35 or
// qwen35moe, with nextn_predict_layers > 0): the target file itself, or llama.cpp's separate
// MTP file.
bool has_mtp_layers(const GgufFile& file);
// The architecture of a model file: throws specd::Error naming the file and its
// general.architecture when it is absent or not supported (listing the supported ones).
const Architecture& architecture_of(const GgufFile& file);

}  // namespace specd
