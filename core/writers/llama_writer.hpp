// Writing GGUF model files from generated weights (constructed benchmark models, random
// models for tests and benchmarks) with llama.cpp's metadata keys and tensor names, so that
// every generator writes the layouts LlamaModel reads: llama by default, or any supported
// architecture's (models/architecture.hpp: its biases, q/k norms, fused tensors).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "writers/gguf_writer.hpp"

namespace specd {

struct LlamaLayout {
  std::string architecture = "llama";  // the metadata prefix (tests write others)
  std::string name;                    // general.name
  uint32_t n_ctx = 256;
  uint32_t n_embd = 64;
  uint32_t n_layer = 2;
  uint32_t n_ff = 128;
  uint32_t n_head = 4;
  uint32_t n_head_kv = 2;
  uint32_t vocab = 264;
  bool tied_output = false;   // no output.weight: the output reuses token_embd
  uint32_t head_dim = 0;      // 0: n_embd / n_head; else written as attention.key_length
  bool rope_freqs = false;    // write rope_freqs.weight (architectures that may have it)
  bool qkv_bias = false;      // write q/k/v biases where they are optional (llama)
  bool separate_qkv = false;  // attn_q/k/v where attn_qkv is optional (phi3)
  float rope_scale = 0.0f;    // > 0: rope.scaling.type "linear" with this factor
  // Hybrid architectures (qwen35): gated DeltaNet layers but every full_attention_interval-th
  // (ssm.* keys: key heads, value heads, their size, convolution taps), RoPE over rope_dim
  // values of each head (0: all), and n_nextn MTP layers after the trunk.
  uint32_t ssm_key_heads = 2, ssm_value_heads = 4, ssm_head_dim = 16, ssm_conv = 4;
  uint32_t full_attention_interval = 4;
  uint32_t rope_dim = 0;
  uint32_t n_nextn = 0;
  bool mtp_output = false;  // the MTP layers have their own LM head (nextn.shared_head_head)
  // Mixtures of experts (qwen3moe, gpt-oss): experts per layer, experts per token, an
  // expert's size.
  uint32_t n_expert = 8, n_expert_used = 2, n_ff_exp = 32;
  uint32_t n_ff_shared = 64;        // qwen35moe's shared expert
  bool fused_gate_up_exps = false;  // one ffn_gate_up_exps {d, 2 F_e, E} (newer converters)
  // > 0: rope.scaling.type "yarn" with this factor and original_context_length yarn_n_ctx_orig.
  float yarn_scale = 0.0f;
  uint32_t yarn_n_ctx_orig = 4096;
  // The keys a sliding-window layer attends (architectures with such layers: gpt-oss).
  uint32_t sliding_window = 8;
};

// kBias: q/k/v biases; kRopeFactors: rope_freqs.weight (values must be > 0). Hybrid layers:
// kConv, the causal convolution's taps [C, K] (stored f32); kDecayBias, ssm_dt.bias; kDecay,
// ssm_a (values must be < 0); kMtpProjection, an MTP layer's eh_proj. Mixtures of experts:
// kRouter, ffn_gate_inp (stored f32, as llama-quantize leaves it); the *_exps are kMatrix,
// their biases (gpt-oss) kBias. kSinks: attention sinks, one per head (gpt-oss).
enum class LlamaTensorRole {
  kEmbedding,
  kNorm,
  kMatrix,
  kOutput,
  kBias,
  kRopeFactors,
  kConv,
  kDecayBias,
  kDecay,
  kMtpProjection,
  kRouter,
  kSinks
};

struct LlamaTensor {
  std::string name;
  std::vector<int64_t> ne;  // ne[0] first: a matrix is {inputs, outputs}, a norm {n_embd}
  LlamaTensorRole role;
};

// Every tensor of the layout in llama.cpp's file order: token_embd; rope_freqs (if asked);
// per block attn_norm, attn_q, attn_k, attn_v (or the fused attn_qkv), their biases, the q/k
// norms, attn_output, ffn_norm, ffn_gate, ffn_up (or the fused gate+up ffn_up), ffn_down;
// output_norm; output (unless tied). The optional parts follow the layout's architecture
// (an unknown architecture name gets llama's tensors, for tests of refusals). A hybrid
// architecture's recurrent layers have attn_norm, attn_qkv, attn_gate, ssm_conv1d, ssm_dt.bias,
// ssm_a, ssm_alpha, ssm_beta, ssm_norm, ssm_out, its attention layers a [q | gate] attn_q, and
// both post_attention_norm before the FFN; MTP layers (blk.<n_layer + i>) are attention layers
// with nextn.eh_proj, enorm, hnorm and shared_head_norm (and shared_head_head, role kOutput,
// with mtp_output). A mixture of experts' layers have ffn_gate_inp, ffn_gate_exps, ffn_up_exps
// and ffn_down_exps (ne {d, F_e, E}, {d, F_e, E}, {F_e, d, E}) in place of the dense FFN;
// qwen35moe's (its MTP layers' too) also ffn_gate_inp_shexp {d} and the shared expert's
// ffn_{gate,up,down}_shexp.
// gpt-oss adds attn_output.bias, attn_sinks.weight, the router's and experts' biases, and
// names the FFN norm post_attention_norm.
std::vector<LlamaTensor> llama_tensors(const LlamaLayout& layout);

// general.architecture, general.name and the <architecture>.* hyperparameters (rope over
// the whole head with base 10000, RMS epsilon 1e-5, vocab_size, key_length when head_dim is
// set, linear rope scaling when rope_scale > 0, YaRN when yarn_scale > 0; the expert counts
// and size of a mixture of experts; the sliding window where the architecture has one).
void set_llama_metadata(GgufWriter& w, const LlamaLayout& layout);

// The start of a one-layer drafter file's metadata (EAGLE-3, DFlash): general.architecture
// and general.name, and <architecture>.context_length, embedding_length, block_count (1) and
// feed_forward_length.
void set_one_layer_metadata(GgufWriter& w, const std::string& architecture, const std::string& name,
                            uint32_t n_ctx, int64_t n_embd, int64_t n_ff);

// Rope frequency divisors for generated rope_freqs.weight tensors, shaped like Llama 3.1's:
// 1 for the first (high-frequency) half of the n pairs, then 2, 3, ... for the rest.
std::vector<float> sample_rope_factors(int64_t n);

// A byte-level GPT-2 tokenizer: <s> and </s> (control, BOS added), the 256 byte tokens in
// GPT-2's byte-to-unicode spelling, then "[PADi]" (unused) up to `vocab` entries, except
// that `words` (texts of any bytes, spelled the same way) are normal tokens from id
// `first_word` on (at least 258; throws Error when they do not fit).
void set_byte_tokenizer(GgufWriter& w, uint32_t vocab, uint32_t first_word = 258,
                        const std::vector<std::string>& words = {});

}  // namespace specd
