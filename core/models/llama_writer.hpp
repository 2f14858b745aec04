// Writing llama-architecture GGUF files from generated weights (constructed benchmark
// models, random models for tests and benchmarks) with llama.cpp's metadata keys and tensor
// names, so that every generator writes the one layout LlamaModel reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_writer.hpp"

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
  bool tied_output = false;  // no output.weight: the output reuses token_embd
};

enum class LlamaTensorRole { kEmbedding, kNorm, kMatrix, kOutput };

struct LlamaTensor {
  std::string name;
  std::vector<int64_t> ne;  // ne[0] first: a matrix is {inputs, outputs}, a norm {n_embd}
  LlamaTensorRole role;
};

// Every tensor of the layout in llama.cpp's file order: token_embd; per block attn_norm,
// attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down; output_norm;
// output (unless tied).
std::vector<LlamaTensor> llama_tensors(const LlamaLayout& layout);

// general.architecture, general.name and the <architecture>.* hyperparameters (rope over
// the whole head with base 10000, RMS epsilon 1e-5, vocab_size).
void set_llama_metadata(GgufWriter& w, const LlamaLayout& layout);

// A byte-level GPT-2 tokenizer: <s> and </s> (control, BOS added), the 256 byte tokens in
// GPT-2's byte-to-unicode spelling, then "[PADi]" (unused) up to `vocab` entries.
void set_byte_tokenizer(GgufWriter& w, uint32_t vocab);

}  // namespace specd
