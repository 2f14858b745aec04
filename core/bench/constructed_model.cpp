#include "bench/constructed_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "bench/weight_presets.hpp"
#include "common/error.hpp"
#include "writers/gguf_writer.hpp"
#include "writers/llama_writer.hpp"

namespace specd::bench {
namespace {

constexpr uint32_t kControl = 2;  // <s>, </s>
constexpr uint32_t kSmallVocab = kControl + 256 + 6;
constexpr int32_t kFirstPrintable = kControl + 0x20, kLastPrintable = kControl + 0x7E;
// The correct token's logit, about: peaked enough that sampling mostly follows the map.
constexpr double kPeakLogit = 12.0;
// Std of the attention and FFN weights times sqrt(n_embd): each layer moves the residual
// stream by about 1% of its size.
constexpr double kLayerScale = 0.1;

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
  } else if (size == "95m") {  // the shape of the quantized-decoding benchmark
    s.n_embd = 1024, s.n_layer = 8, s.n_head = 16, s.n_head_kv = 8, s.n_ff = 2816;
  } else if (size == "0.5b") {
    s.n_embd = 1536, s.n_layer = 16, s.n_head = 12, s.n_head_kv = 12, s.n_ff = 4096;
  } else if (size == "1.5b") {
    s.n_embd = 2048, s.n_layer = 28, s.n_head = 16, s.n_head_kv = 16, s.n_ff = 5632;
  } else {
    throw UsageError("unknown constructed model size '" + size + "' (tiny, 0.1b, 95m, 0.5b, 1.5b)");
  }
  return s;
}

ConstructedSpec constructed_draft(double agreement, const std::string& size) {
  // Outside [0, 1] the disagreeing subset would be larger than the map (or NaN).
  if (!(agreement >= 0 && agreement <= 1))
    throw UsageError("constructed draft: agreement " + std::to_string(agreement) +
                     " must lie in [0, 1]");
  ConstructedSpec s;
  if (!size.empty()) {
    s = constructed_preset(size);
  } else {
    s.n_embd = 64, s.n_layer = 1, s.n_head = 2, s.n_head_kv = 2, s.n_ff = 128;
  }
  s.name = size.empty() ? "constructed-draft" : "constructed-draft-" + size;
  s.agreement = agreement;
  s.seed = 2;
  return s;
}

void check_constructed_architecture(const std::string& a) {
  if (a != "llama" && a != "qwen35")
    throw UsageError("unknown constructed architecture '" + a + "' (llama, qwen35)");
}

void check_constructed_vocab(uint64_t vocab) {
  if (vocab < kSmallVocab || vocab > (uint64_t{1} << 20))
    throw UsageError("constructed model: a vocabulary of " + std::to_string(vocab) +
                     " tokens is outside [" + std::to_string(kSmallVocab) +
                     ", 1048576] (the byte tokenizer takes 258, the planted map 264)");
}

namespace {

// A hybrid's gated DeltaNet width: heads of S = min(128, d / 4) values, keys and values each
// 2 d wide (Qwen3.5-0.8B: d 1024, 16 heads of 128).
uint32_t hybrid_head_dim(const ConstructedSpec& s) {
  return std::min(128u, s.n_embd / 4);
}

}  // namespace

uint64_t constructed_parameters(const ConstructedSpec& s) {
  const uint64_t d = s.n_embd, head = d / s.n_head;
  const uint64_t ffn = 3 * d * s.n_ff + 2 * d;
  const uint64_t attention = d * d * 2 + 2 * d * head * s.n_head_kv;
  if (s.architecture != "qwen35") return 2 * d * s.vocab + s.n_layer * (attention + ffn) + d;
  // Gated attention doubles q; DeltaNet layers: qkv 6 d^2, gate and out 2 d^2 each.
  const uint64_t gated = attention + d * d, delta = 10 * d * d;
  const uint64_t n_attention = s.n_layer / 4, n_delta = s.n_layer - n_attention;
  return 2 * d * s.vocab + n_delta * (delta + ffn) + n_attention * (gated + ffn) +
         (gated + ffn + 2 * d * d) + d;
}

GgmlType constructed_tensor_type(const ConstructedSpec& s, const std::string& name,
                                 int64_t row_length) {
  TensorShape shape;
  shape.row_length = row_length;
  shape.n_layer = s.n_layer;
  shape.n_gqa = s.n_head / s.n_head_kv;
  return preset_tensor_type(weight_preset(s.weights), name, shape);
}

std::vector<int32_t> constructed_next(const ConstructedSpec& spec) {
  const std::vector<int32_t> cycle = planted_cycle(spec.map_seed);
  const size_t n = cycle.size();
  std::vector<int32_t> next(spec.vocab, cycle[0]);  // everything leads into the cycle
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

std::pair<int32_t, int32_t> constructed_cycle_range() {
  return {kFirstPrintable, kLastPrintable};
}

std::vector<float> constructed_embedding(const ConstructedSpec& s, std::mt19937_64& rng) {
  // One Gaussian vector per cycle token; tokens outside the cycle copy the embedding of the
  // cycle token before cycle[0], so they lead where it leads.
  const uint32_t d = s.n_embd;
  std::normal_distribution<float> unit(0.0f, 1.0f);
  const std::vector<int32_t> cycle = planted_cycle(s.map_seed);
  std::vector<float> embd(static_cast<size_t>(d) * s.vocab);
  for (int32_t t = kFirstPrintable; t <= kLastPrintable; ++t)
    for (uint32_t i = 0; i < d; ++i) embd[size_t(t) * d + i] = unit(rng);
  const int32_t into_cycle = cycle.back();  // its planted next is cycle[0]
  for (uint32_t t = 0; t < s.vocab; ++t)
    if (int32_t(t) < kFirstPrintable || int32_t(t) > kLastPrintable)
      std::copy_n(embd.begin() + size_t(into_cycle) * d, d, embd.begin() + size_t(t) * d);
  return embd;
}

std::vector<float> constructed_output(const ConstructedSpec& s, const std::vector<float>& embd) {
  // Output row j = s·E_t summed over the cycle tokens t with next(t) = j; the normalised
  // state has norm √d, so the planted token's logit is about kPeakLogit (raised with the
  // vocabulary, so that the many other tokens take as little of the mass as with 264).
  const uint32_t d = s.n_embd;
  const std::vector<int32_t> next = constructed_next(s);
  const double peak = kPeakLogit + std::log(double(s.vocab) / double(kSmallVocab));
  const float scale = float(peak / double(d));
  std::vector<float> out(static_cast<size_t>(d) * s.vocab, 0.0f);
  for (int32_t t = kFirstPrintable; t <= kLastPrintable; ++t) {
    const int32_t j = next[t];
    for (uint32_t i = 0; i < d; ++i) out[size_t(j) * d + i] += scale * embd[size_t(t) * d + i];
  }
  return out;
}

uint32_t write_constructed_model(const std::string& path, const ConstructedSpec& s) {
  if (s.n_embd % s.n_head || s.n_head % s.n_head_kv || s.n_embd % 32)
    throw UsageError("constructed model: n_embd must be a multiple of 32 and of n_head");
  check_constructed_vocab(s.vocab);
  const uint32_t d = s.n_embd, kVocab = s.vocab;
  check_constructed_architecture(s.architecture);
  const bool hybrid = s.architecture == "qwen35";
  LlamaLayout layout;
  layout.architecture = s.architecture;
  layout.name = s.name;
  layout.n_ctx = s.n_ctx;
  layout.n_embd = d;
  layout.n_layer = s.n_layer;
  layout.n_ff = s.n_ff;
  layout.n_head = s.n_head;
  layout.n_head_kv = s.n_head_kv;
  layout.vocab = kVocab;
  if (hybrid) {
    const uint32_t S = hybrid_head_dim(s);
    layout.head_dim = d / s.n_head;
    layout.rope_dim = std::max(2u, layout.head_dim / 4 / 2 * 2);  // Qwen3.5: a quarter
    layout.ssm_head_dim = S;
    layout.ssm_key_heads = layout.ssm_value_heads = 2 * d / S;
    layout.n_nextn = 1;
    layout.mtp_output = s.mtp_agreement < 1.0;
  }
  GgufWriter w;
  set_llama_metadata(w, layout);
  w.set_u32("general.file_type", weight_preset(s.weights).file_type);  // llama_ftype
  set_byte_tokenizer(w, kVocab);

  std::mt19937_64 rng(s.seed);
  const std::vector<float> embd = constructed_embedding(s, rng);
  std::vector<float> out = constructed_output(s, embd);
  // The unused tokens beyond the small vocabulary embed as the other tokens outside the
  // cycle do (they lead into it) and get small output rows (logits of about ±0.3): they are
  // scored, and never win.
  {
    std::normal_distribution<float> small(0.0f, float(0.3 / double(d)));
    for (uint32_t t = kSmallVocab; t < kVocab; ++t)
      for (uint32_t i = 0; i < d; ++i) out[size_t(t) * d + i] = small(rng);
  }

  // The MTP layer's own LM head: the map on mtp_agreement of the cycle.
  std::vector<float> mtp_out;
  if (layout.mtp_output) {
    ConstructedSpec m = s;
    m.agreement = s.mtp_agreement;
    mtp_out = constructed_output(m, embd);
    std::copy(out.begin() + size_t(kSmallVocab) * d, out.end(),
              mtp_out.begin() + size_t(kSmallVocab) * d);
  }
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  // Norms are ones; attention, DeltaNet and FFN matrices small Gaussians (kLayerScale).
  for (const LlamaTensor& t : llama_tensors(layout)) {
    const size_t n = static_cast<size_t>(t.ne[0]) * (t.ne.size() > 1 ? t.ne[1] : 1);
    std::vector<float> v(n);
    switch (t.role) {
      case LlamaTensorRole::kEmbedding:
        w.add_tensor_f32(t.name, constructed_tensor_type(s, t.name, t.ne[0]), t.ne, embd.data());
        break;
      case LlamaTensorRole::kOutput:
        w.add_tensor_f32(t.name, constructed_tensor_type(s, t.name, t.ne[0]), t.ne,
                         t.name.find("nextn.") != std::string::npos ? mtp_out.data() : out.data());
        break;
      case LlamaTensorRole::kConv:  // taps in [-0.5, 0.5): a mixing of recent rows
        for (float& x : v) x = unit(rng) - 0.5f;
        w.add_tensor_f32(t.name, GgmlType::kF32, t.ne, v.data());
        break;
      case LlamaTensorRole::kDecayBias:  // softplus^-1 of step sizes in [0.001, 0.1), as trained
        for (float& x : v) x = std::log(std::expm1(0.001f + 0.099f * unit(rng)));
        w.add_tensor_f32(t.name, GgmlType::kF32, t.ne, v.data());
        break;
      case LlamaTensorRole::kDecay:  // -exp(A_log), A in [1, 16)
        for (float& x : v) x = -(1.0f + 15.0f * unit(rng));
        w.add_tensor_f32(t.name, GgmlType::kF32, t.ne, v.data());
        break;
      case LlamaTensorRole::kMtpProjection: {
        // [d, 2d]: the next token's (normed) embedding carried through, the target's feature
        // weighted by kLayerScale, so the MTP layer predicts the map from the token.
        std::normal_distribution<float> g(0.0f, float(kLayerScale / std::sqrt(double(t.ne[0]))));
        for (float& x : v) x = g(rng);
        for (uint32_t i = 0; i < d; ++i) v[size_t(i) * 2 * d + i] += 1.0f;
        w.add_tensor_f32(t.name, constructed_tensor_type(s, t.name, t.ne[0]), t.ne, v.data());
        break;
      }
      case LlamaTensorRole::kNorm:
        std::fill(v.begin(), v.end(), 1.0f);
        w.add_tensor_f32(t.name, GgmlType::kF32, t.ne, v.data());
        break;
      case LlamaTensorRole::kMatrix: {
        std::normal_distribution<float> g(0.0f, float(kLayerScale / std::sqrt(double(t.ne[0]))));
        for (float& x : v) x = g(rng);
        w.add_tensor_f32(t.name, constructed_tensor_type(s, t.name, t.ne[0]), t.ne, v.data());
        break;
      }
      case LlamaTensorRole::kBias:
      case LlamaTensorRole::kRopeFactors:
        throw Error("constructed model: the layout has no tensor " + t.name);
    }
  }
  w.write(path);
  return kVocab;
}

namespace {

// Everything a constructed model is made from, as text (the side file's content).
std::string spec_text(const ConstructedSpec& s) {
  char text[512];
  std::snprintf(text, sizeof text,
                "constructed-model 3\nname %s\nshape %u %u %u %u %u %u\nweights %s\n"
                "map_seed %llu\nagreement %.17g\nseed %llu\nvocab %u\narchitecture %s\n"
                "mtp_agreement %.17g\n",
                s.name.c_str(), s.n_embd, s.n_layer, s.n_head, s.n_head_kv, s.n_ff, s.n_ctx,
                s.weights.c_str(), static_cast<unsigned long long>(s.map_seed), s.agreement,
                static_cast<unsigned long long>(s.seed), s.vocab, s.architecture.c_str(),
                s.mtp_agreement);
  return text;
}

}  // namespace

bool ensure_constructed_model(const std::string& path, const ConstructedSpec& spec) {
  const std::string side = path + ".spec", want = spec_text(spec);
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) && std::filesystem::is_regular_file(side, ec)) {
    std::ifstream in(side, std::ios::binary);
    const std::string have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (have == want) return false;
  }
  std::filesystem::remove(side, ec);  // no stale record while the model is rewritten
  write_constructed_model(path, spec);
  std::ofstream out(side, std::ios::binary);
  out << want;
  if (!out.flush()) throw Error(side + ": cannot write the constructed model's record");
  return true;
}

}  // namespace specd::bench
