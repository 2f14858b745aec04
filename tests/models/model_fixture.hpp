// Random-weight llama GGUF fixtures (written with the GGUF writer; nothing binary is
// committed) and an independent naive double-precision llama forward to check against.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gguf/ggml_types.hpp"
#include "gguf/gguf_reader.hpp"
#include "gguf/gguf_writer.hpp"
#include "models/llama_writer.hpp"

namespace specd::test {

struct FixtureSpec {
  int64_t d = 64, n_head = 4, n_head_kv = 2, n_ff = 128, n_layer = 2, vocab = 96;
  GgmlType matrix_type = GgmlType::kF16;
  bool tied = false;
  uint32_t seed = 1;
  std::string architecture = "llama";
  std::string skip_tensor;       // leave this tensor out
  std::string bad_shape_tensor;  // give this tensor a wrong shape
};

inline std::string fixture_dir() {
  const std::string dir = std::string(SPECD_BINARY_DIR) + "/test-fixtures/models";
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string write_fixture(const FixtureSpec& s, const std::string& file) {
  std::mt19937 rng(s.seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  LlamaLayout layout;
  layout.architecture = s.architecture;
  layout.name = "fixture";
  layout.n_embd = static_cast<uint32_t>(s.d);
  layout.n_layer = static_cast<uint32_t>(s.n_layer);
  layout.n_ff = static_cast<uint32_t>(s.n_ff);
  layout.n_head = static_cast<uint32_t>(s.n_head);
  layout.n_head_kv = static_cast<uint32_t>(s.n_head_kv);
  layout.vocab = static_cast<uint32_t>(s.vocab);
  layout.tied_output = s.tied;
  GgufWriter w;
  set_llama_metadata(w, layout);
  // Scales that keep activations O(1): norms near 1, matrices ~ 1/sqrt(inputs), q and k
  // doubled so that attention is not uniform.
  const float ws = 1.0f / std::sqrt(static_cast<float>(s.d));
  auto scale_of = [&](const LlamaTensor& t) {
    if (t.role == LlamaTensorRole::kEmbedding) return 1.0f;
    if (t.role == LlamaTensorRole::kNorm) return 0.1f;
    if (t.name.find("attn_q.") != std::string::npos || t.name.find("attn_k.") != std::string::npos)
      return 2 * ws;
    if (t.name.find("ffn_down.") != std::string::npos) return 1.0f / std::sqrt(float(s.n_ff));
    return ws;
  };
  for (LlamaTensor t : llama_tensors(layout)) {
    if (t.name == s.skip_tensor) continue;
    if (t.name == s.bad_shape_tensor) t.ne[0] += 32;
    int64_t n = 1;
    for (int64_t e : t.ne) n *= e;
    const bool norm = t.role == LlamaTensorRole::kNorm;
    const float scale = scale_of(t), mean = norm ? 1.0f : 0.0f;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = mean + scale * nd(rng);
    w.add_tensor_f32(t.name, norm ? GgmlType::kF32 : s.matrix_type, t.ne, v.data());
  }
  const std::string path = fixture_dir() + "/" + file;
  w.write(path);
  return path;
}

// ---- Naive reference: double precision, whole sequence, causal ------------------------

inline std::vector<double> tensor_values(const GgufFile& f, const std::string& name) {
  const GgufTensor& t = f.require_tensor(name);
  std::vector<float> v(static_cast<size_t>(t.n_elements));
  const auto* b = static_cast<const uint8_t*>(t.data);
  switch (t.type) {
    case GgmlType::kF32:
      std::memcpy(v.data(), b, v.size() * 4);
      break;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      for (size_t i = 0; i < v.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, b + 2 * i, 2);
        v[i] = t.type == GgmlType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    default:  // block-quantized: llama.cpp's exact dequantization
      if (!ggml_decodable(t.type)) throw std::runtime_error("fixture: unexpected type");
      dequantize_row(t.type, b, v.data(), t.n_elements);
      break;
  }
  return std::vector<double>(v.begin(), v.end());
}

// logits [T][V] for tokens at positions 0..T-1 (and hidden [T][d] before the final norm).
inline std::vector<std::vector<double>> naive_forward(
    const std::string& path, const std::vector<int32_t>& tokens,
    std::vector<std::vector<double>>* hidden = nullptr) {
  GgufFile f = GgufFile::open(path);
  const int64_t d = f.get_u32("llama.embedding_length"),
                H = f.get_u32("llama.attention.head_count");
  const int64_t Hkv = f.get_u32("llama.attention.head_count_kv"),
                F = f.get_u32("llama.feed_forward_length");
  const int64_t L = f.get_u32("llama.block_count"), hd = d / H;
  const double eps = f.get_f32("llama.attention.layer_norm_rms_epsilon");
  const double base = f.get_f32("llama.rope.freq_base");
  const auto emb = tensor_values(f, "token_embd.weight");
  const int64_t V = static_cast<int64_t>(emb.size()) / d;
  const int64_t T = static_cast<int64_t>(tokens.size());
  auto matvec = [](const std::vector<double>& W, const std::vector<double>& x, int64_t out) {
    const int64_t in = static_cast<int64_t>(x.size());
    std::vector<double> y(out, 0.0);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) y[o] += W[o * in + i] * x[i];
    return y;
  };
  auto rmsnorm = [&](const std::vector<double>& x, const std::vector<double>& w) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double r = 1.0 / std::sqrt(ss / x.size() + eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * w[i];
    return y;
  };
  auto rope = [&](std::vector<double>& v, int64_t heads, int64_t pos) {
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < hd / 2; ++i) {
        const double th = pos * std::pow(base, -2.0 * i / hd);
        const double a = v[h * hd + 2 * i], b = v[h * hd + 2 * i + 1];
        v[h * hd + 2 * i] = a * std::cos(th) - b * std::sin(th);
        v[h * hd + 2 * i + 1] = a * std::sin(th) + b * std::cos(th);
      }
  };
  std::vector<std::vector<double>> e(T);
  for (int64_t t = 0; t < T; ++t)
    e[t].assign(emb.begin() + tokens[t] * d, emb.begin() + (tokens[t] + 1) * d);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const auto an = tensor_values(f, p + "attn_norm.weight"),
               fn = tensor_values(f, p + "ffn_norm.weight");
    const auto wq = tensor_values(f, p + "attn_q.weight"),
               wk = tensor_values(f, p + "attn_k.weight");
    const auto wv = tensor_values(f, p + "attn_v.weight"),
               wo = tensor_values(f, p + "attn_output.weight");
    const auto wg = tensor_values(f, p + "ffn_gate.weight"),
               wu = tensor_values(f, p + "ffn_up.weight");
    const auto wd = tensor_values(f, p + "ffn_down.weight");
    std::vector<std::vector<double>> q(T), k(T), v(T);
    for (int64_t t = 0; t < T; ++t) {
      const auto n = rmsnorm(e[t], an);
      q[t] = matvec(wq, n, H * hd);
      k[t] = matvec(wk, n, Hkv * hd);
      v[t] = matvec(wv, n, Hkv * hd);
      rope(q[t], H, t);
      rope(k[t], Hkv, t);
    }
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> a(H * hd, 0.0);
      for (int64_t h = 0; h < H; ++h) {
        const int64_t kh = h / (H / Hkv);
        std::vector<double> s(t + 1);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j <= t; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < hd; ++c) dot += q[t][h * hd + c] * k[j][kh * hd + c];
          s[j] = dot / std::sqrt(double(hd));
          mx = std::max(mx, s[j]);
        }
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t j = 0; j <= t; ++j)
          for (int64_t c = 0; c < hd; ++c) a[h * hd + c] += s[j] / sum * v[j][kh * hd + c];
      }
      const auto o = matvec(wo, a, d);
      for (int64_t i = 0; i < d; ++i) e[t][i] += o[i];
      const auto n = rmsnorm(e[t], fn);
      auto g = matvec(wg, n, F);
      const auto u = matvec(wu, n, F);
      for (int64_t i = 0; i < F; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      const auto dn = matvec(wd, g, d);
      for (int64_t i = 0; i < d; ++i) e[t][i] += dn[i];
    }
  }
  if (hidden) *hidden = e;
  const auto on = tensor_values(f, "output_norm.weight");
  const auto wout = f.tensor("output.weight") ? tensor_values(f, "output.weight") : emb;
  std::vector<std::vector<double>> logits(T);
  for (int64_t t = 0; t < T; ++t) logits[t] = matvec(wout, rmsnorm(e[t], on), V);
  return logits;
}

}  // namespace specd::test
