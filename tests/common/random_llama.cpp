#include "random_llama.hpp"

#include <unistd.h>

#include <filesystem>
#include <random>
#include <vector>

#include "gguf/gguf_writer.hpp"

namespace specd::test {
namespace {

// GPT-2's byte-to-unicode map: printable bytes stand for themselves, the rest are shifted
// to code points from 256 up.
std::string byte_token(int b) {
  auto printable = [](int c) {
    return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
  };
  int cp = b;
  if (!printable(b)) {
    int shift = 0;
    for (int c = 0; c < b; ++c)
      if (!printable(c)) ++shift;
    cp = 256 + shift;
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

}  // namespace

std::string temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("specd-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

uint32_t write_random_llama(const std::string& path, const RandomLlamaSpec& s) {
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> normal(0.0f, s.weight_scale);
  const uint32_t vocab = 258 + s.extra_vocab;
  const uint32_t head_dim = s.n_embd / s.n_head;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "random-llama-" + std::to_string(s.seed));
  w.set_u32("general.file_type", 1);
  w.set_u32("llama.context_length", s.n_ctx);
  w.set_u32("llama.embedding_length", s.n_embd);
  w.set_u32("llama.block_count", s.n_layer);
  w.set_u32("llama.feed_forward_length", s.n_ff);
  w.set_u32("llama.attention.head_count", s.n_head);
  w.set_u32("llama.attention.head_count_kv", s.n_head_kv);
  w.set_u32("llama.rope.dimension_count", head_dim);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32("llama.vocab_size", vocab);

  std::vector<std::string> tokens = {"<s>", "</s>"};
  std::vector<int32_t> types = {3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(byte_token(b));
    types.push_back(1);
  }
  for (uint32_t i = 0; i < s.extra_vocab; ++i) {
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

  auto matrix = [&](const std::string& name, uint32_t in, uint32_t out, GgmlType type) {
    std::vector<float> v(static_cast<size_t>(in) * out);
    for (float& x : v) x = normal(rng);
    w.add_tensor_f32(name, type, {in, out}, v.data());
  };
  auto norm = [&](const std::string& name, uint32_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = 1.0f + normal(rng);
    w.add_tensor_f32(name, GgmlType::kF32, {n}, v.data());
  };
  matrix("token_embd.weight", s.n_embd, vocab, s.weight_type);
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    norm(p + "attn_norm.weight", s.n_embd);
    matrix(p + "attn_q.weight", s.n_embd, s.n_head * head_dim, s.weight_type);
    matrix(p + "attn_k.weight", s.n_embd, s.n_head_kv * head_dim, s.weight_type);
    matrix(p + "attn_v.weight", s.n_embd, s.n_head_kv * head_dim, s.weight_type);
    matrix(p + "attn_output.weight", s.n_head * head_dim, s.n_embd, s.weight_type);
    norm(p + "ffn_norm.weight", s.n_embd);
    matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff, s.weight_type);
    matrix(p + "ffn_up.weight", s.n_embd, s.n_ff, s.weight_type);
    matrix(p + "ffn_down.weight", s.n_ff, s.n_embd, s.weight_type);
  }
  norm("output_norm.weight", s.n_embd);
  if (!s.tied_output) matrix("output.weight", s.n_embd, vocab, s.weight_type);
  w.write(path);
  return vocab;
}

}  // namespace specd::test
