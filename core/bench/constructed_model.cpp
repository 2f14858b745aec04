#include "bench/constructed_model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "common/error.hpp"
#include "gguf/gguf_writer.hpp"

namespace specd::bench {
namespace {

constexpr uint32_t kControl = 2;  // <s>, </s>
constexpr uint32_t kVocab = kControl + 256 + 6;
constexpr int32_t kFirstPrintable = kControl + 0x20, kLastPrintable = kControl + 0x7E;
// The correct token's logit, about: peaked enough that sampling mostly follows the map.
constexpr double kPeakLogit = 12.0;
// Std of the attention and FFN weights times sqrt(n_embd): each layer moves the residual
// stream by about 1% of its size.
constexpr double kLayerScale = 0.1;

// GPT-2's byte-to-unicode map (printable bytes stand for themselves).
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

// The planted cycle over printable tokens, in visiting order.
std::vector<int32_t> planted_cycle(uint64_t map_seed) {
  std::vector<int32_t> cycle;
  for (int32_t t = kFirstPrintable; t <= kLastPrintable; ++t) cycle.push_back(t);
  std::mt19937_64 rng(map_seed);
  std::shuffle(cycle.begin(), cycle.end(), rng);
  return cycle;
}

}  // namespace

ConstructedSpec constructed_preset(const std::string& size) {
  ConstructedSpec s;
  s.name = "constructed-" + size;
  if (size == "tiny") {
    s.n_embd = 256, s.n_layer = 2, s.n_head = 4, s.n_head_kv = 4, s.n_ff = 512;
  } else if (size == "0.1b") {
    s.n_embd = 768, s.n_layer = 12, s.n_head = 12, s.n_head_kv = 12, s.n_ff = 2048;
  } else if (size == "0.5b") {
    s.n_embd = 1536, s.n_layer = 16, s.n_head = 12, s.n_head_kv = 12, s.n_ff = 4096;
  } else if (size == "1.5b") {
    s.n_embd = 2048, s.n_layer = 28, s.n_head = 16, s.n_head_kv = 16, s.n_ff = 5632;
  } else {
    throw UsageError("unknown constructed model size '" + size + "' (tiny, 0.1b, 0.5b, 1.5b)");
  }
  return s;
}

ConstructedSpec constructed_draft(double agreement) {
  ConstructedSpec s;
  s.name = "constructed-draft";
  s.n_embd = 64, s.n_layer = 1, s.n_head = 2, s.n_head_kv = 2, s.n_ff = 128;
  s.agreement = agreement;
  s.seed = 2;
  return s;
}

uint64_t constructed_parameters(const ConstructedSpec& s) {
  const uint64_t d = s.n_embd, head = d / s.n_head;
  const uint64_t layer = d * d * 2 + 2 * d * head * s.n_head_kv + 3 * d * s.n_ff + 2 * d;
  return 2 * d * kVocab + s.n_layer * layer + d;
}

GgmlType parse_weight_type(const std::string& name) {
  if (name == "f16") return GgmlType::kF16;
  if (name == "q8_0") return GgmlType::kQ8_0;
  if (name == "f32") return GgmlType::kF32;
  throw UsageError("weight type '" + name + "' is not one of f16, q8_0, f32");
}

std::vector<int32_t> constructed_next(const ConstructedSpec& spec) {
  const std::vector<int32_t> cycle = planted_cycle(spec.map_seed);
  const size_t n = cycle.size();
  std::vector<int32_t> next(kVocab, cycle[0]);  // everything leads into the cycle
  for (size_t i = 0; i < n; ++i) next[cycle[i]] = cycle[(i + 1) % n];
  if (spec.agreement < 1.0) {
    // Disagree on a fixed-size random subset: next-but-one instead of next.
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(spec.map_seed * 31 + 5);
    std::shuffle(order.begin(), order.end(), rng);
    const size_t disagree = static_cast<size_t>(std::lround((1.0 - spec.agreement) * double(n)));
    for (size_t j = 0; j < disagree; ++j) next[cycle[order[j]]] = cycle[(order[j] + 2) % n];
  }
  return next;
}

uint32_t write_constructed_model(const std::string& path, const ConstructedSpec& s) {
  if (s.n_embd % s.n_head || s.n_head % s.n_head_kv || s.n_embd % 32)
    throw UsageError("constructed model: n_embd must be a multiple of 32 and of n_head");
  const uint32_t d = s.n_embd, head_dim = d / s.n_head;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", s.name);
  w.set_u32("general.file_type", s.type == GgmlType::kQ8_0 ? 7 : s.type == GgmlType::kF16 ? 1 : 0);
  w.set_u32("llama.context_length", s.n_ctx);
  w.set_u32("llama.embedding_length", d);
  w.set_u32("llama.block_count", s.n_layer);
  w.set_u32("llama.feed_forward_length", s.n_ff);
  w.set_u32("llama.attention.head_count", s.n_head);
  w.set_u32("llama.attention.head_count_kv", s.n_head_kv);
  w.set_u32("llama.rope.dimension_count", head_dim);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32("llama.vocab_size", kVocab);
  std::vector<std::string> tokens = {"<s>", "</s>"};
  std::vector<int32_t> types = {3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(byte_token(b));
    types.push_back(1);
  }
  for (uint32_t i = 0; tokens.size() < kVocab; ++i) {
    tokens.push_back("[PAD" + std::to_string(i) + "]");
    types.push_back(5);
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

  std::mt19937_64 rng(s.seed);
  std::normal_distribution<float> unit(0.0f, 1.0f);
  const std::vector<int32_t> next = constructed_next(s);

  // Embeddings: one Gaussian vector per cycle token; tokens outside the cycle copy the
  // embedding of the cycle token before cycle[0], so they lead where it leads.
  const std::vector<int32_t> cycle = planted_cycle(s.map_seed);
  std::vector<float> embd(static_cast<size_t>(d) * kVocab);
  for (int32_t t = kFirstPrintable; t <= kLastPrintable; ++t)
    for (uint32_t i = 0; i < d; ++i) embd[size_t(t) * d + i] = unit(rng);
  const int32_t into_cycle = cycle.back();  // its planted next is cycle[0]
  for (uint32_t t = 0; t < kVocab; ++t)
    if (int32_t(t) < kFirstPrintable || int32_t(t) > kLastPrintable)
      std::copy_n(embd.begin() + size_t(into_cycle) * d, d, embd.begin() + size_t(t) * d);
  w.add_tensor_f32("token_embd.weight", s.type, {d, kVocab}, embd.data());

  auto small = [&](const std::string& name, uint32_t in, uint32_t out) {
    std::normal_distribution<float> g(0.0f, float(kLayerScale / std::sqrt(double(in))));
    std::vector<float> v(static_cast<size_t>(in) * out);
    for (float& x : v) x = g(rng);
    w.add_tensor_f32(name, s.type, {in, out}, v.data());
  };
  auto ones = [&](const std::string& name) {
    std::vector<float> v(d, 1.0f);
    w.add_tensor_f32(name, GgmlType::kF32, {d}, v.data());
  };
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    ones(p + "attn_norm.weight");
    small(p + "attn_q.weight", d, s.n_head * head_dim);
    small(p + "attn_k.weight", d, s.n_head_kv * head_dim);
    small(p + "attn_v.weight", d, s.n_head_kv * head_dim);
    small(p + "attn_output.weight", s.n_head * head_dim, d);
    ones(p + "ffn_norm.weight");
    small(p + "ffn_gate.weight", d, s.n_ff);
    small(p + "ffn_up.weight", d, s.n_ff);
    small(p + "ffn_down.weight", s.n_ff, d);
  }
  ones("output_norm.weight");

  // Output row j = s·E_t summed over the cycle tokens t with next(t) = j; the normalised
  // state has norm √d, so the planted token's logit is about kPeakLogit.
  const float scale = float(kPeakLogit / double(d));
  std::vector<float> out(static_cast<size_t>(d) * kVocab, 0.0f);
  for (int32_t t = kFirstPrintable; t <= kLastPrintable; ++t) {
    const int32_t j = next[t];
    for (uint32_t i = 0; i < d; ++i) out[size_t(j) * d + i] += scale * embd[size_t(t) * d + i];
  }
  w.add_tensor_f32("output.weight", s.type, {d, kVocab}, out.data());
  w.write(path);
  return kVocab;
}

}  // namespace specd::bench
