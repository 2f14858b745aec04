// Constructed llama models for system-speed measurements. The shipped models fit in cache;
// these are as large as asked (0.1–1.5 B parameters), so decoding reads its weights from
// memory like a real LLM, and their output is known in advance.
//
// Construction: a planted next-token map next(t), one cycle over the printable ASCII byte
// tokens, or with a planted text over the text's words, each a token of its own from id 264 on
// (every other token leads into the cycle). Token t embeds as a Gaussian vector E_t
// (near-orthogonal to the others); the output matrix row of token j is s·E_prev(j), so the
// logits of the final (normalised) residual state peak at next(t). The attention and FFN
// weights are small Gaussians, nonzero, so every layer does its full work and perturbs the
// residual stream a little without moving the argmax. Greedy decoding from t therefore
// walks the cycle. A draft is the same construction, tiny, with the same map on a chosen
// fraction of the cycle's tokens and a different next token elsewhere.
//
// With architecture "qwen35" the target is a hybrid as Qwen3.5 lays it out (llama.cpp's
// qwen35): gated DeltaNet layers (small Gaussian projections, realistic convolution taps and
// decays) with every fourth layer gated attention, and one MTP layer after the trunk whose
// projection carries the next token's embedding through and whose LM head follows the map on
// `mtp_agreement` of the cycle (its own head, nextn.shared_head_head, below 1).
//
// With architecture "qwen3moe" every layer's FFN is a mixture of experts as Qwen3-MoE lays it
// out (llama.cpp's qwen3moe: a router ffn_gate_inp kept f32 and stacks of n_expert SwiGLU
// experts), with qwen3's per-head q/k norms: the router and the experts are small Gaussians
// like the other layers' matrices, so each token goes through its own n_expert_used experts
// (the weight reads of a real MoE) and the planted map still decides the output. With
// "gpt-oss" the same shapes take gpt-oss's layout (llama.cpp's openai-moe): q/k/v, output,
// router and expert biases and attention sinks (small Gaussians, f32), YaRN (factor 32 over
// 4096 positions) and a window of 128 keys on the even layers. Drafts stay dense llama models
// of the same vocabulary.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gguf/ggml_types.hpp"

namespace specd {
class GgufWriter;
}

namespace specd::bench {

struct ConstructedSpec {
  std::string name = "constructed";
  uint32_t n_embd = 256, n_layer = 2, n_head = 4, n_head_kv = 4, n_ff = 512, n_ctx = 1024;
  std::string weights = "f16";  // a weight preset (bench/weight_presets.hpp): f16, q4_K_M, ...
  uint64_t map_seed = 7;        // the planted map (targets and drafts of one sweep share it)
  double agreement = 1.0;       // fraction of cycle tokens where this model follows the map
  uint64_t seed = 1;            // weights
  uint32_t vocab = 264;         // tokens (>= 264): 258 byte-tokenizer ones, the rest unused
  // or "qwen35" (a hybrid with an MTP layer), "qwen3moe", "gpt-oss"
  std::string architecture = "llama";
  double mtp_agreement = 1.0;  // qwen35: the MTP layer's agreement with the map
  // qwen3moe, gpt-oss: experts per layer, experts each token goes through, an expert's size
  // (all 0 for the dense architectures, whose FFN is n_ff wide).
  uint32_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  // A planted text ("" = the printable cycle): greedy decoding spells it over and over. Each
  // word with the white space before it (the text's trailing white space: with the last) is a
  // token of its own, so a repeated word is two tokens of the same spelling.
  std::string text;
};

// Presets by size for `architecture` (which is checked, and set in the spec). Dense (llama,
// qwen35): "tiny" (≈1.4 M), "0.1b", "95m" (d 1024, 8 layers, 16 heads, 8 KV heads, FFN 2816),
// "0.5b", "1.5b" (parameter counts approximate). qwen3moe, gpt-oss: "tiny" (d 256, 2 layers, 8
// experts of 128, 2 per token) and "moe-3b" (d 1024, 28 layers, 16 heads, 4 KV heads, 64 experts of
// 512, 8 per token: 2.96 B parameters, 0.49 B per token with 32000 tokens). Throws
// UsageError for an unknown size and for a size of the other kind (moe-3b with llama).
ConstructedSpec constructed_preset(const std::string& size,
                                   const std::string& architecture = "llama");
// The architectures --arch takes: "llama", "qwen35", "qwen3moe", "gpt-oss".
void check_constructed_architecture(const std::string& architecture);
// The drafts' shape, always a dense llama: one small layer, or with `size` a dense preset's
// (e.g. "0.1b" beside a 1.5b target). `agreement` must lie in [0, 1] and `size` be a dense
// size; throws UsageError otherwise.
ConstructedSpec constructed_draft(double agreement, const std::string& size = "");
// Throws UsageError unless `vocab` is at least 264 and at most 2^20.
void check_constructed_vocab(uint64_t vocab);
// Throws UsageError unless `spec.text` is empty or its words fit in the vocabulary beyond id
// 264.
void check_constructed_text(const ConstructedSpec& spec);
// Every weight of the model (exact for llama, qwen3moe and gpt-oss, approximate for qwen35).
uint64_t constructed_parameters(const ConstructedSpec& spec);
// The weights one token's forward pass reads: a mixture of experts' n_expert_used experts of
// each layer, not all n_expert; all of them for a dense model.
uint64_t constructed_active_parameters(const ConstructedSpec& spec);
// The type a tensor of a constructed model is written in: its weight preset's choice for
// that tensor, row length and number of dimensions (3: a stack of experts; the router and
// 1-D tensors stay f32: bench/weight_presets.hpp).
GgmlType constructed_tensor_type(const ConstructedSpec& spec, const std::string& tensor,
                                 int64_t row_length, uint32_t n_dims = 2);

// The planted cycle's tokens in visiting order: the printable byte tokens shuffled by
// `spec.map_seed`, or the planted text's words (ids 264, 265, ...).
std::vector<int32_t> constructed_cycle(const ConstructedSpec& spec);
// The pieces of a planted text, in order: each is white space then a word, a one-byte first
// word joined to the next (concatenated they give the text back). Throws UsageError for a
// text that is empty, all white space, one byte or longer than 4096 bytes.
std::vector<std::string> planted_words(const std::string& text);

// The map the model computes: next[t] for every token id (the planted map where the model
// agrees, the disagreeing token elsewhere).
std::vector<int32_t> constructed_next(const ConstructedSpec& spec);

// The token embeddings [vocab, n_embd] (drawn first from the weights' generator `rng`) and
// the output rows [vocab, n_embd] that map each token's embedding to its next token under
// `spec`'s map (the rows beyond the printable cycle left zero).
std::vector<float> constructed_embedding(const ConstructedSpec& spec, std::mt19937_64& rng);
std::vector<float> constructed_output(const ConstructedSpec& spec, const std::vector<float>& embd);

// The byte-level tokenizer of `spec`'s vocabulary (with its planted text's words) into `w`.
void set_constructed_tokenizer(GgufWriter& w, const ConstructedSpec& spec);

// Writes the GGUF (byte-level tokenizer, llama.cpp names); returns the vocabulary size.
// Throws UsageError for a spec it cannot write: a shape that does not divide, experts on a
// dense architecture, a mixture of experts without a valid expert count and size.
uint32_t write_constructed_model(const std::string& path, const ConstructedSpec& spec);

// The same, unless `path` already holds this spec's model: a side file `path`.spec records
// the spec each model was written from, so reruns (make demo, a bench with --models-dir)
// reuse what they wrote. Returns true when it wrote the model.
bool ensure_constructed_model(const std::string& path, const ConstructedSpec& spec);

}  // namespace specd::bench
