#include "bench/constructed_eagle3.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "writers/gguf_writer.hpp"
#include "writers/llama_writer.hpp"

namespace specd::bench {
namespace {

// q·k of an element with itself is kSelf² √(head dim) (its normed embedding has unit RMS),
// with any other token about kSelf² · N(0, 1): attention stays on the element's own token.
constexpr float kSelf = 1.5f;

// [rows, cols] (ne {cols, rows}) with `value` on the diagonal of its first min(rows, cols)
// columns and zero elsewhere.
std::vector<float> diagonal(int64_t rows, int64_t cols, float value) {
  std::vector<float> m(static_cast<size_t>(rows * cols), 0.0f);
  for (int64_t i = 0; i < std::min(rows, cols); ++i) m[static_cast<size_t>(i * cols + i)] = value;
  return m;
}

}  // namespace

void write_constructed_eagle3(const std::string& path, const ConstructedSpec& target,
                              double agreement) {
  constructed_draft(agreement);  // refuses an agreement outside [0, 1]
  const int64_t d = target.n_embd, V = target.vocab, n_ff = 128;
  ConstructedSpec map = target;
  map.agreement = agreement;
  std::mt19937_64 rng(target.seed);
  const std::vector<float> out = constructed_output(map, constructed_embedding(target, rng));

  GgufWriter w;
  const std::string a = "eagle3.";
  set_one_layer_metadata(w, "eagle3", target.name + "-eagle3", target.n_ctx, d, n_ff);
  w.set_u32(a + "attention.head_count", target.n_head);
  w.set_u32(a + "attention.head_count_kv", target.n_head);
  w.set_f32(a + "rope.freq_base", 10000.0f);
  w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(d / target.n_head));
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32(a + "vocab_size", static_cast<uint32_t>(V));
  // llama.cpp's converter's choice: a low, the middle and a high layer.
  const int32_t n = static_cast<int32_t>(target.n_layer);
  const std::vector<int32_t> layers = {std::min(2, n - 1), n / 2, std::max(n - 3, 0)};
  w.set(a + "target_layers", GgufValue::int32_array(layers));
  w.set_u32(a + "target_hidden_size", static_cast<uint32_t>(d));
  w.set_bool(a + "norm_before_residual", true);
  set_constructed_tokenizer(w, target);

  const GgmlType q8 = GgmlType::kQ8_0;
  const std::vector<float> zeros(static_cast<size_t>(std::max(3 * d, 2 * n_ff) * d), 0.0f);
  const std::vector<float> ones(static_cast<size_t>(d), 1.0f);
  w.add_tensor_f32("fc.weight", q8, {3 * d, d}, zeros.data());
  w.add_tensor_f32("output_norm.weight", GgmlType::kF32, {d}, ones.data());
  w.add_tensor_f32("output.weight", q8, {d, V}, out.data());
  const std::string p = "blk.0.";
  const std::vector<float> qk = diagonal(d, 2 * d, kSelf), pass = diagonal(d, 2 * d, 1.0f),
                           identity = diagonal(d, d, 1.0f);
  w.add_tensor_f32(p + "attn_norm.weight", GgmlType::kF32, {d}, ones.data());
  w.add_tensor_f32(p + "attn_norm_2.weight", GgmlType::kF32, {d}, zeros.data());
  w.add_tensor_f32(p + "attn_q.weight", q8, {2 * d, d}, qk.data());
  w.add_tensor_f32(p + "attn_k.weight", q8, {2 * d, d}, qk.data());
  w.add_tensor_f32(p + "attn_v.weight", q8, {2 * d, d}, pass.data());
  w.add_tensor_f32(p + "attn_output.weight", q8, {d, d}, identity.data());
  w.add_tensor_f32(p + "ffn_norm.weight", GgmlType::kF32, {d}, ones.data());
  w.add_tensor_f32(p + "ffn_gate.weight", q8, {d, n_ff}, zeros.data());
  w.add_tensor_f32(p + "ffn_up.weight", q8, {d, n_ff}, zeros.data());
  w.add_tensor_f32(p + "ffn_down.weight", q8, {n_ff, d}, zeros.data());
  w.write(path);
}

}  // namespace specd::bench
