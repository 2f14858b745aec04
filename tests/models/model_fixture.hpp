// Random-weight llama GGUF fixtures (written with the GGUF writer; nothing binary is
// committed) and an independent naive double-precision llama forward to check against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gguf/ggml_types.hpp"
#include "gguf/gguf_reader.hpp"
#include "test_paths.hpp"
#include "writers/gguf_writer.hpp"
#include "writers/llama_writer.hpp"

namespace specd::test {

struct FixtureSpec {
  int64_t d = 64, n_head = 4, n_head_kv = 2, n_ff = 128, n_layer = 2, vocab = 96;
  GgmlType matrix_type = GgmlType::kF16;
  bool tied = false;
  uint32_t seed = 1;
  std::string architecture = "llama";
  uint32_t head_dim = 0;      // 0: d / n_head
  bool rope_freqs = false;    // llama: write rope_freqs.weight
  bool qkv_bias = false;      // llama: write the optional q/k/v biases
  bool separate_qkv = false;  // phi3: attn_q/k/v instead of the fused attn_qkv
  float rope_scale = 0;       // > 0: linear rope scaling factor
  std::string extra_tensor;   // also write this f32 vector of d / n_head / 2 ones
  std::vector<std::pair<std::string, std::string>> string_keys;  // set after the metadata
  std::vector<std::pair<std::string, uint32_t>> u32_keys;        // likewise
  std::vector<std::pair<std::string, float>> f32_keys;           // likewise
  std::string skip_tensor;                                       // leave this tensor out
  std::string bad_shape_tensor;                                  // give this tensor a wrong shape
  uint32_t n_expert = 8, n_expert_used = 2, n_ff_exp = 32;       // qwen3moe: the experts
  float yarn_scale = 0;             // > 0: YaRN with this factor (original context 4096)
  bool fused_gate_up_exps = false;  // experts' gate and up in one ffn_gate_up_exps
  uint32_t sliding_window = 8;      // gpt-oss: the keys its even layers attend
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
  layout.head_dim = s.head_dim;
  layout.rope_freqs = s.rope_freqs;
  layout.qkv_bias = s.qkv_bias;
  layout.separate_qkv = s.separate_qkv;
  layout.rope_scale = s.rope_scale;
  layout.n_expert = s.n_expert;
  layout.n_expert_used = s.n_expert_used;
  layout.n_ff_exp = s.n_ff_exp;
  layout.yarn_scale = s.yarn_scale;
  layout.fused_gate_up_exps = s.fused_gate_up_exps;
  layout.sliding_window = s.sliding_window;
  GgufWriter w;
  set_llama_metadata(w, layout);
  for (const auto& [key, value] : s.string_keys) w.set_string(key, value);
  for (const auto& [key, value] : s.u32_keys) w.set_u32(key, value);
  for (const auto& [key, value] : s.f32_keys) w.set_f32(key, value);
  if (!s.extra_tensor.empty()) {
    const std::vector<float> ones(static_cast<size_t>(s.d / s.n_head / 2), 1.0f);
    w.add_tensor_f32(s.extra_tensor, GgmlType::kF32, {static_cast<int64_t>(ones.size())},
                     ones.data());
  }
  // Scales that keep activations O(1): norms near 1, matrices ~ 1/sqrt(inputs), q and k
  // doubled so that attention is not uniform.
  const float ws = 1.0f / std::sqrt(static_cast<float>(s.d));
  auto scale_of = [&](const LlamaTensor& t) {
    if (t.role == LlamaTensorRole::kEmbedding) return 1.0f;
    if (t.role == LlamaTensorRole::kNorm) return 0.1f;
    if (t.name.find("attn_q.") != std::string::npos || t.name.find("attn_k.") != std::string::npos)
      return 2 * ws;
    if (t.name.find("ffn_down.") != std::string::npos) return 1.0f / std::sqrt(float(s.n_ff));
    if (t.name.find("ffn_down_exps.") != std::string::npos)
      return 1.0f / std::sqrt(float(s.n_ff_exp));
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
    if (t.role == LlamaTensorRole::kRopeFactors) v = sample_rope_factors(n);
    const bool vec = norm || t.role == LlamaTensorRole::kBias ||
                     t.role == LlamaTensorRole::kSinks || t.role == LlamaTensorRole::kRopeFactors ||
                     t.role == LlamaTensorRole::kRouter;
    w.add_tensor_f32(t.name, vec ? GgmlType::kF32 : s.matrix_type, t.ne, v.data());
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

// The experts a row goes to from its router logits and their weights: softmax over all, the
// expert_used_count most probable (the lower index first on a tie), weights divided by their
// sum (qwen3moe); for gpt-oss, whose logits carry the router's bias, the same weights are a
// softmax over the chosen logits, which is what this computes too.
inline std::vector<std::pair<int64_t, double>> naive_experts(const GgufFile& f,
                                                             const std::string& a,
                                                             const std::vector<double>& logits) {
  const size_t k = f.get_u32(a + "expert_used_count");
  const double mx = *std::max_element(logits.begin(), logits.end());
  std::vector<std::pair<int64_t, double>> p;
  double total = 0;
  for (size_t x = 0; x < logits.size(); ++x) {
    p.emplace_back(static_cast<int64_t>(x), std::exp(logits[x] - mx));
    total += p.back().second;
  }
  std::stable_sort(p.begin(), p.end(),
                   [](const auto& l, const auto& r) { return l.second > r.second; });
  p.resize(k);
  double chosen = 0;
  for (auto& [x, w] : p) chosen += (w /= total);
  for (auto& [x, w] : p) w /= chosen;
  return p;
}

// logits [T][V] for tokens at positions 0..T-1 (and hidden [T][d] before the final norm), for
// any supported architecture: its key prefix, RoPE pairing, biases, q/k norms, fused tensors
// and rope_freqs, written out independently of the model code.
inline std::vector<std::vector<double>> naive_forward(
    const std::string& path, const std::vector<int32_t>& tokens,
    std::vector<std::vector<double>>* hidden = nullptr) {
  GgufFile f = GgufFile::open(path);
  const std::string arch = f.get_string("general.architecture");
  const std::string a = arch + ".";
  const int64_t d = f.get_u32(a + "embedding_length"), H = f.get_u32(a + "attention.head_count");
  const int64_t Hkv = f.get_u32(a + "attention.head_count_kv"),
                F = f.get_u32(a + "feed_forward_length");
  const int64_t L = f.get_u32(a + "block_count");
  const int64_t hd = f.get_u32_opt(a + "attention.key_length").value_or(d / H);
  const double eps = f.get_f32(a + "attention.layer_norm_rms_epsilon");
  const double base = f.get_f32(a + "rope.freq_base");
  const bool neox = arch == "qwen2" || arch == "qwen3" || arch == "phi3" || arch == "qwen3moe" ||
                    arch == "gpt-oss";
  const std::string scaling = f.get_string_opt(a + "rope.scaling.type").value_or("");
  const bool yarn = scaling == "yarn";
  double freq_scale = 1.0;
  if (scaling == "linear" || yarn) freq_scale = 1.0 / f.get_f32(a + "rope.scaling.factor");
  // YaRN (ggml's rope_yarn, ext_factor 1; beta_fast and beta_slow 32 and 1 unless the file
  // says): pair i's angle mixes the scaled and unscaled ones by a ramp over the pairs between
  // two corner dimensions, and cos and sin grow by 1 + 0.1 ln(factor).
  double yarn_lo = 0, yarn_hi = 0;
  if (yarn) {
    const double n_orig = f.get_u32(a + "rope.scaling.original_context_length");
    auto corner = [&](double beta) {
      return hd * std::log(n_orig / (2 * M_PI * beta)) / (2 * std::log(base));
    };
    const double fast = f.get_f32_opt(a + "rope.scaling.yarn_beta_fast").value_or(32);
    const double slow = f.get_f32_opt(a + "rope.scaling.yarn_beta_slow").value_or(1);
    yarn_lo = std::max(0.0, std::floor(corner(fast)));
    yarn_hi = std::min(double(hd - 1), std::ceil(corner(slow)));
  }
  // gpt-oss: the even layers attend only their last sliding_window keys.
  const int64_t window = f.get_u32_opt(a + "attention.sliding_window").value_or(0);
  std::vector<double> factors(hd / 2, 1.0);
  if (f.tensor("rope_freqs.weight")) factors = tensor_values(f, "rope_freqs.weight");
  const auto emb = tensor_values(f, "token_embd.weight");
  const int64_t V = static_cast<int64_t>(emb.size()) / d;
  const int64_t T = static_cast<int64_t>(tokens.size());
  auto matvec = [](const std::vector<double>& W, const std::vector<double>& x, int64_t out,
                   int64_t first_row = 0) {
    const int64_t in = static_cast<int64_t>(x.size());
    std::vector<double> y(out, 0.0);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) y[o] += W[(first_row + o) * in + i] * x[i];
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
        const double unscaled = pos * std::pow(base, -2.0 * i / hd) / factors[i];
        double th = unscaled * freq_scale, mag = 1.0;
        if (yarn) {
          const double ramp =
              1 - std::clamp((i - yarn_lo) / std::max(0.001, yarn_hi - yarn_lo), 0.0, 1.0);
          th = th * (1 - ramp) + unscaled * ramp;
          mag = 1 + 0.1 * std::log(1 / freq_scale);
        }
        const int64_t i0 = h * hd + (neox ? i : 2 * i), i1 = i0 + (neox ? hd / 2 : 1);
        const double x0 = v[i0], x1 = v[i1];
        v[i0] = mag * (x0 * std::cos(th) - x1 * std::sin(th));
        v[i1] = mag * (x0 * std::sin(th) + x1 * std::cos(th));
      }
  };
  auto add_to = [](std::vector<double>& x, const std::vector<double>& b) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += b[i];
  };
  auto head_norm = [&](std::vector<double>& x, int64_t heads, const std::vector<double>& w) {
    for (int64_t h = 0; h < heads; ++h) {
      const std::vector<double> part(x.begin() + h * hd, x.begin() + (h + 1) * hd);
      const auto n = rmsnorm(part, w);
      std::copy(n.begin(), n.end(), x.begin() + h * hd);
    }
  };
  // A mixture of experts: E experts of Fe rows; expert x's FFN of n added to `out` times w.
  const int64_t E = f.get_u32_opt(a + "expert_count").value_or(0);
  const int64_t Fe = f.get_u32_opt(a + "expert_feed_forward_length").value_or(0);
  // gpt-oss's experts have biases (row x of each *_exps.bias) and a clamped SwiGLU.
  const bool oai = arch == "gpt-oss";
  auto swiglu_into = [&](std::vector<double>& out, const std::vector<double>& gate,
                         const std::vector<double>& up, const std::vector<double>& down,
                         const std::vector<double>* biases, const std::vector<double>& n,
                         int64_t rows, int64_t x, double w) {
    auto g = matvec(gate, n, rows, x * rows);
    auto u = matvec(up, n, rows, x * rows);
    if (biases)
      for (int64_t i = 0; i < rows; ++i) {
        g[i] += biases[0][x * rows + i];
        u[i] += biases[1][x * rows + i];
      }
    for (int64_t i = 0; i < rows; ++i) {
      if (oai) {  // alpha 1.702, limit 7
        const double gc = std::min(g[i], 7.0), uc = std::clamp(u[i], -7.0, 7.0);
        g[i] = gc / (1 + std::exp(-1.702 * gc)) * (uc + 1);
      } else {
        g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      }
    }
    auto y = matvec(down, g, d, x * d);
    if (biases)
      for (int64_t i = 0; i < d; ++i) y[i] += biases[2][x * d + i];
    for (int64_t i = 0; i < d; ++i) out[i] += w * y[i];
  };
  std::vector<std::vector<double>> e(T);
  for (int64_t t = 0; t < T; ++t)
    e[t].assign(emb.begin() + tokens[t] * d, emb.begin() + (tokens[t] + 1) * d);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    auto has = [&](const std::string& n) { return f.tensor(p + n) != nullptr; };
    const auto an = tensor_values(f, p + "attn_norm.weight"),
               fn = tensor_values(
                   f, p + (has("post_attention_norm.weight") ? "post_attention_norm.weight"
                                                             : "ffn_norm.weight"));
    const bool sliding = window > 0 && l % 2 == 0;
    const bool fused_qkv = has("attn_qkv.weight");
    const auto wqkv = fused_qkv ? tensor_values(f, p + "attn_qkv.weight") : std::vector<double>{};
    const auto wq = fused_qkv ? wqkv : tensor_values(f, p + "attn_q.weight");
    const auto wk = fused_qkv ? wqkv : tensor_values(f, p + "attn_k.weight");
    const auto wv = fused_qkv ? wqkv : tensor_values(f, p + "attn_v.weight");
    const int64_t k_row = fused_qkv ? H * hd : 0, v_row = fused_qkv ? H * hd + Hkv * hd : 0;
    const auto wo = tensor_values(f, p + "attn_output.weight");
    const bool moe = has("ffn_gate_inp.weight");  // experts in place of the dense FFN
    auto values_if = [&](bool want, const std::string& n) {
      return want ? tensor_values(f, p + n) : std::vector<double>{};
    };
    const bool fused_up = !moe && !has("ffn_gate.weight");
    const auto wu = values_if(!moe, "ffn_up.weight");
    const auto wg = fused_up ? wu : values_if(!moe, "ffn_gate.weight");
    const auto wd = values_if(!moe, "ffn_down.weight");
    const auto bo = values_if(has("attn_output.bias"), "attn_output.bias");
    const auto sinks = values_if(has("attn_sinks.weight"), "attn_sinks.weight");
    const auto router = values_if(moe, "ffn_gate_inp.weight");
    const auto router_bias = values_if(has("ffn_gate_inp.bias"), "ffn_gate_inp.bias");
    const std::vector<double> expert_biases[3] = {values_if(oai, "ffn_gate_exps.bias"),
                                                  values_if(oai, "ffn_up_exps.bias"),
                                                  values_if(oai, "ffn_down_exps.bias")};
    // A fused ffn_gate_up_exps holds each expert's gate rows, then its up rows: split here.
    const bool fused_exps = has("ffn_gate_up_exps.weight");
    std::vector<double> ge = values_if(moe && !fused_exps, "ffn_gate_exps.weight"),
                        ue = values_if(moe && !fused_exps, "ffn_up_exps.weight");
    const auto de = values_if(moe, "ffn_down_exps.weight");
    if (fused_exps) {
      const auto both = tensor_values(f, p + "ffn_gate_up_exps.weight");
      const size_t half = static_cast<size_t>(Fe * d);
      for (size_t at = 0; at < both.size(); at += 2 * half) {
        ge.insert(ge.end(), both.begin() + at, both.begin() + at + half);
        ue.insert(ue.end(), both.begin() + at + half, both.begin() + at + 2 * half);
      }
    }
    const bool bias = has("attn_q.bias"), qk_norm = has("attn_q_norm.weight");
    std::vector<double> bq, bk, bv, qn, kn;
    if (bias) {
      bq = tensor_values(f, p + "attn_q.bias");
      bk = tensor_values(f, p + "attn_k.bias");
      bv = tensor_values(f, p + "attn_v.bias");
    }
    if (qk_norm) {
      qn = tensor_values(f, p + "attn_q_norm.weight");
      kn = tensor_values(f, p + "attn_k_norm.weight");
    }
    std::vector<std::vector<double>> q(T), k(T), v(T);
    for (int64_t t = 0; t < T; ++t) {
      const auto n = rmsnorm(e[t], an);
      q[t] = matvec(wq, n, H * hd);
      k[t] = matvec(wk, n, Hkv * hd, k_row);
      v[t] = matvec(wv, n, Hkv * hd, v_row);
      if (bias) {
        add_to(q[t], bq);
        add_to(k[t], bk);
        add_to(v[t], bv);
      }
      if (qk_norm) {
        head_norm(q[t], H, qn);
        head_norm(k[t], Hkv, kn);
      }
      rope(q[t], H, t);
      rope(k[t], Hkv, t);
    }
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> at(H * hd, 0.0);
      for (int64_t h = 0; h < H; ++h) {
        const int64_t kh = h / (H / Hkv);
        const int64_t first = sliding ? std::max<int64_t>(0, t - window + 1) : 0;
        std::vector<double> sc(t + 1, 0.0);
        double mx = sinks.empty() ? -1e300 : sinks[h], sum = 0;
        for (int64_t j = first; j <= t; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < hd; ++c) dot += q[t][h * hd + c] * k[j][kh * hd + c];
          sc[j] = dot / std::sqrt(double(hd));
          mx = std::max(mx, sc[j]);
        }
        for (int64_t j = first; j <= t; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
        if (!sinks.empty()) sum += std::exp(sinks[h] - mx);  // a key whose value is zero
        for (int64_t j = first; j <= t; ++j)
          for (int64_t c = 0; c < hd; ++c) at[h * hd + c] += sc[j] / sum * v[j][kh * hd + c];
      }
      auto o = matvec(wo, at, d);
      if (!bo.empty()) add_to(o, bo);
      for (int64_t i = 0; i < d; ++i) e[t][i] += o[i];
      const auto n = rmsnorm(e[t], fn);
      if (moe) {
        auto logits = matvec(router, n, E);
        if (!router_bias.empty()) add_to(logits, router_bias);
        for (const auto& [x, weight] : naive_experts(f, a, logits))
          swiglu_into(e[t], ge, ue, de, oai ? expert_biases : nullptr, n, Fe, x, weight);
        continue;
      }
      auto g = matvec(wg, n, F);                          // fused: the gate is rows [0, F)
      const auto u = matvec(wu, n, F, fused_up ? F : 0);  // fused: up is rows [F, 2F)
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
