#include "models/llama_writer.hpp"

#include "common/error.hpp"
#include "tokenizer/unicode.hpp"

namespace specd {

std::vector<LlamaTensor> llama_tensors(const LlamaLayout& l) {
  const int64_t d = l.n_embd, f = l.n_ff, head_dim = l.n_embd / l.n_head;
  const int64_t q = l.n_head * head_dim, kv = l.n_head_kv * head_dim;
  using R = LlamaTensorRole;
  std::vector<LlamaTensor> t = {{"token_embd.weight", {d, l.vocab}, R::kEmbedding}};
  for (uint32_t i = 0; i < l.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    t.push_back({p + "attn_norm.weight", {d}, R::kNorm});
    t.push_back({p + "attn_q.weight", {d, q}, R::kMatrix});
    t.push_back({p + "attn_k.weight", {d, kv}, R::kMatrix});
    t.push_back({p + "attn_v.weight", {d, kv}, R::kMatrix});
    t.push_back({p + "attn_output.weight", {q, d}, R::kMatrix});
    t.push_back({p + "ffn_norm.weight", {d}, R::kNorm});
    t.push_back({p + "ffn_gate.weight", {d, f}, R::kMatrix});
    t.push_back({p + "ffn_up.weight", {d, f}, R::kMatrix});
    t.push_back({p + "ffn_down.weight", {f, d}, R::kMatrix});
  }
  t.push_back({"output_norm.weight", {d}, R::kNorm});
  if (!l.tied_output) t.push_back({"output.weight", {d, l.vocab}, R::kOutput});
  return t;
}

void set_llama_metadata(GgufWriter& w, const LlamaLayout& l) {
  if (l.n_head == 0 || l.n_embd % l.n_head != 0)
    throw Error("llama writer: n_embd must be a multiple of n_head");
  const std::string a = l.architecture + ".";
  w.set_string("general.architecture", l.architecture);
  w.set_string("general.name", l.name);
  w.set_u32(a + "context_length", l.n_ctx);
  w.set_u32(a + "embedding_length", l.n_embd);
  w.set_u32(a + "block_count", l.n_layer);
  w.set_u32(a + "feed_forward_length", l.n_ff);
  w.set_u32(a + "attention.head_count", l.n_head);
  w.set_u32(a + "attention.head_count_kv", l.n_head_kv);
  w.set_u32(a + "rope.dimension_count", l.n_embd / l.n_head);
  w.set_f32(a + "rope.freq_base", 10000.0f);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32(a + "vocab_size", l.vocab);
}

void set_byte_tokenizer(GgufWriter& w, uint32_t vocab) {
  if (vocab < 258) throw Error("llama writer: a byte tokenizer needs at least 258 tokens");
  std::vector<std::string> tokens = {"<s>", "</s>"};
  std::vector<int32_t> types = {3, 3};  // control
  for (int b = 0; b < 256; ++b) {
    std::string spelling;
    utf8_append(spelling, gpt2_byte_to_codepoint(static_cast<uint8_t>(b)));
    tokens.push_back(spelling);
    types.push_back(1);  // normal
  }
  for (uint32_t i = 0; tokens.size() < vocab; ++i) {
    tokens.push_back("[PAD" + std::to_string(i) + "]");
    types.push_back(5);  // unused
  }
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "gpt-2");
  w.set("tokenizer.ggml.tokens", GgufValue::string_array(tokens));
  w.set("tokenizer.ggml.token_type", GgufValue::int32_array(types));
  w.set("tokenizer.ggml.merges", GgufValue::string_array({}));
  w.set_u32("tokenizer.ggml.bos_token_id", 0);
  w.set_u32("tokenizer.ggml.eos_token_id", 1);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_bool("tokenizer.ggml.add_eos_token", false);
}

}  // namespace specd
