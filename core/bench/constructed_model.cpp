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

// The most bytes a planted text may have: a paragraph, not a corpus.
constexpr size_t kMaxTextBytes = 4096;

bool white(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

// The cycle's tokens in ascending id order: the order their embeddings are drawn and their
// output rows summed in (for the printable cycle, the order the files always had).
std::vector<int32_t> ascending(std::vector<int32_t> cycle) {
  std::sort(cycle.begin(), cycle.end());
  return cycle;
}

// A preset's shape; the experts' fields are 0 for the dense ones.
struct Shape {
  const char* size;
  uint32_t n_embd, n_layer, n_head, n_head_kv, n_ff;
  uint32_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
};

// Dense shapes ("95m" is the shape of the quantized-decoding benchmark).
constexpr Shape kDenseShapes[] = {
    {"tiny", 256, 2, 4, 4, 512},      {"0.1b", 768, 12, 12, 12, 2048},
    {"95m", 1024, 8, 16, 8, 2816},    {"0.5b", 1536, 16, 12, 12, 4096},
    {"1.5b", 2048, 28, 16, 16, 5632},
};

// Mixtures of experts. feed_forward_length (n_ff) is the active FFN width, n_expert_used
// experts of n_ff_exp: what a dense layer of the same per-token cost would have (the layers
// themselves only read the expert size). "moe-3b" is a 3B-A0.5B class: Qwen3-MoE's routing
// (8 experts per token, no shared expert) on a smaller trunk than Qwen3-30B-A3B's (d 2048,
// 48 layers, 128 experts of 768).
constexpr Shape kMoeShapes[] = {
    {"tiny", 256, 2, 4, 4, 2 * 128, 8, 2, 128},
    {"moe-3b", 1024, 28, 16, 4, 8 * 512, 64, 8, 512},
};

template <size_t N>
const Shape* find_shape(const Shape (&shapes)[N], const std::string& size) {
  for (const Shape& s : shapes)
    if (size == s.size) return &s;
  return nullptr;
}

template <size_t N>
std::string size_names(const Shape (&shapes)[N]) {
  std::string out;
  for (const Shape& s : shapes) out += (out.empty() ? "" : ", ") + std::string(s.size);
  return out;
}

bool mixture_of_experts(const std::string& architecture) {
  return architecture == "qwen3moe" || architecture == "gpt-oss";
}

// The shape of `size` for a dense or an MoE architecture; refuses a size of the other kind
// with what the architecture takes.
const Shape& preset_shape(const std::string& size, const std::string& architecture) {
  const bool moe = mixture_of_experts(architecture);
  if (const Shape* s = moe ? find_shape(kMoeShapes, size) : find_shape(kDenseShapes, size))
    return *s;
  const std::string takes = moe ? size_names(kMoeShapes) : size_names(kDenseShapes);
  if (!moe && find_shape(kMoeShapes, size))
    throw UsageError("constructed model size '" + size +
                     "' is a mixture of experts: it needs the architecture qwen3moe or gpt-oss "
                     "(--arch qwen3moe; " +
                     architecture + " sizes: " + takes + ")");
  if (moe && find_shape(kDenseShapes, size))
    throw UsageError("constructed model size '" + size + "' is a dense shape; --arch " +
                     architecture + " (a mixture of experts) takes " + takes);
  throw UsageError("unknown constructed model size '" + size + "' (" + takes +
                   (moe ? "" : "; " + size_names(kMoeShapes) + " with --arch qwen3moe or gpt-oss") +
                   ")");
}

}  // namespace

ConstructedSpec constructed_preset(const std::string& size, const std::string& architecture) {
  check_constructed_architecture(architecture);
  const Shape& shape = preset_shape(size, architecture);
  ConstructedSpec s;
  s.name = "constructed-" + size;
  s.architecture = architecture;
  s.n_embd = shape.n_embd, s.n_layer = shape.n_layer, s.n_head = shape.n_head;
  s.n_head_kv = shape.n_head_kv, s.n_ff = shape.n_ff;
  s.n_expert = shape.n_expert, s.n_expert_used = shape.n_expert_used;
  s.n_ff_exp = shape.n_ff_exp;
  return s;
}

ConstructedSpec constructed_draft(double agreement, const std::string& size) {
  // Outside [0, 1] the disagreeing subset would be larger than the map (or NaN).
  if (!(agreement >= 0 && agreement <= 1))
    throw UsageError("constructed draft: agreement " + std::to_string(agreement) +
                     " must lie in [0, 1]");
  // Drafts are dense llama models: a draft's cost is its weights, all read for every token.
  if (!size.empty() && !find_shape(kDenseShapes, size) && find_shape(kMoeShapes, size))
    throw UsageError("constructed drafts are dense llama models: draft size '" + size +
                     "' is a mixture of experts (draft sizes: " + size_names(kDenseShapes) + ")");
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
  if (a != "llama" && a != "qwen35" && !mixture_of_experts(a))
    throw UsageError("unknown constructed architecture '" + a +
                     "' (llama, qwen35, qwen3moe, gpt-oss)");
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

// A mixture of experts' weights with `experts` of each layer's experts counted: attention (with
// qwen3moe's q/k norms, or gpt-oss's biases and sinks), the router, the experts (gpt-oss: and
// their biases, and the router's), the two norms of each layer.
uint64_t moe_parameters(const ConstructedSpec& s, uint64_t experts) {
  const uint64_t d = s.n_embd, head = d / s.n_head, kv = head * s.n_head_kv, E = s.n_expert;
  const bool oss = s.architecture == "gpt-oss";
  const uint64_t attention = 2 * d * d + 2 * d * kv + (oss ? 2 * d + 2 * kv + s.n_head : 2 * head);
  const uint64_t expert = 3 * d * s.n_ff_exp + (oss ? 2 * s.n_ff_exp + d : 0);
  const uint64_t ffn = d * E + (oss ? E : 0) + expert * experts + 2 * d;
  return 2 * d * s.vocab + s.n_layer * (attention + ffn) + d;
}

}  // namespace

uint64_t constructed_active_parameters(const ConstructedSpec& s) {
  return mixture_of_experts(s.architecture) ? moe_parameters(s, s.n_expert_used)
                                            : constructed_parameters(s);
}

uint64_t constructed_parameters(const ConstructedSpec& s) {
  if (mixture_of_experts(s.architecture)) return moe_parameters(s, s.n_expert);
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
                                 int64_t row_length, uint32_t n_dims) {
  TensorShape shape;
  shape.row_length = row_length;
  shape.n_dims = n_dims;
  shape.n_layer = s.n_layer;
  shape.n_gqa = s.n_head / s.n_head_kv;
  shape.n_expert = s.n_expert;
  return preset_tensor_type(weight_preset(s.weights), name, shape);
}

std::vector<int32_t> constructed_next(const ConstructedSpec& spec) {
  const std::vector<int32_t> cycle = constructed_cycle(spec);
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

std::vector<std::string> planted_words(const std::string& text) {
  if (text.size() > kMaxTextBytes)
    throw UsageError("constructed model: a planted text of " + std::to_string(text.size()) +
                     " bytes is longer than " + std::to_string(kMaxTextBytes));
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && white(text[j])) ++j;
    if (j == text.size()) break;  // trailing white space: the last word's
    while (j < text.size() && !white(text[j])) ++j;
    words.push_back(text.substr(i, j - i));
    i = j;
  }
  if (words.empty()) throw UsageError("constructed model: the planted text has no word");
  words.back() += text.substr(i);
  // A one-byte word (only the first can be one) would spell a byte token again.
  if (words[0].size() == 1) {
    if (words.size() == 1)
      throw UsageError("constructed model: the planted text needs at least two bytes");
    words[1] = words[0] + words[1];
    words.erase(words.begin());
  }
  return words;
}

void check_constructed_text(const ConstructedSpec& s) {
  if (!s.text.empty()) constructed_cycle(s);
}

std::vector<int32_t> constructed_cycle(const ConstructedSpec& spec) {
  std::vector<int32_t> cycle;
  if (!spec.text.empty()) {
    const size_t n = planted_words(spec.text).size();
    if (n > spec.vocab - std::min(spec.vocab, kSmallVocab))
      throw UsageError("constructed model: the planted text's " + std::to_string(n) +
                       " words need a vocabulary of at least " + std::to_string(kSmallVocab + n) +
                       " tokens (--vocab " + std::to_string(spec.vocab) + ")");
    for (size_t i = 0; i < n; ++i) cycle.push_back(int32_t(kSmallVocab + i));
    return cycle;
  }
  for (int32_t t = kFirstPrintable; t <= kLastPrintable; ++t) cycle.push_back(t);
  std::mt19937_64 rng(spec.map_seed);
  std::shuffle(cycle.begin(), cycle.end(), rng);
  return cycle;
}

std::vector<float> constructed_embedding(const ConstructedSpec& s, std::mt19937_64& rng) {
  // One Gaussian vector per cycle token; tokens outside the cycle embed as the cycle token
  // before cycle[0] plus a smaller vector of their own, so they lead where it leads and yet
  // differ (a mixture of experts routes them apart, as it routes a real vocabulary's tokens).
  // Their own parts come from a generator of their own: the weights drawn after the
  // embedding do not change with the vocabulary.
  const uint32_t d = s.n_embd;
  std::normal_distribution<float> unit(0.0f, 1.0f);
  const std::vector<int32_t> cycle = constructed_cycle(s);
  std::vector<float> embd(static_cast<size_t>(d) * s.vocab);
  std::vector<char> in_cycle(s.vocab, 0);
  for (int32_t t : ascending(cycle)) {
    in_cycle[size_t(t)] = 1;
    for (uint32_t i = 0; i < d; ++i) embd[size_t(t) * d + i] = unit(rng);
  }
  const int32_t into_cycle = cycle.back();  // its planted next is cycle[0]
  std::mt19937_64 own(s.seed * 0x9E3779B97F4A7C15ull + 11);
  std::normal_distribution<float> half(0.0f, 0.5f);
  for (uint32_t t = 0; t < s.vocab; ++t)
    if (!in_cycle[t])
      for (uint32_t i = 0; i < d; ++i)
        embd[size_t(t) * d + i] = embd[size_t(into_cycle) * d + i] + half(own);
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
  for (int32_t t : ascending(constructed_cycle(s))) {
    const int32_t j = next[t];
    for (uint32_t i = 0; i < d; ++i) out[size_t(j) * d + i] += scale * embd[size_t(t) * d + i];
  }
  return out;
}

namespace {

// A mixture of experts needs its expert counts and size, a dense model none: experts rows of
// whole 32-blocks (the block of q8_0 and mxfp4, as n_embd), at least two experts and
// 1 <= n_expert_used <= n_expert.
void check_constructed_experts(const ConstructedSpec& s) {
  if (!mixture_of_experts(s.architecture)) {
    if (s.n_expert || s.n_expert_used || s.n_ff_exp)
      throw UsageError("constructed model: experts need --arch qwen3moe or gpt-oss; " +
                       s.architecture + " has a dense FFN");
    return;
  }
  if (s.n_expert < 2 || s.n_expert > 4096 || s.n_expert_used < 1 || s.n_expert_used > s.n_expert)
    throw UsageError("constructed " + s.architecture + " model: " +
                     std::to_string(s.n_expert_used) + " of " + std::to_string(s.n_expert) +
                     " experts per token (at least 1 of 2 to 4096, and no more than there are)");
  if (s.n_ff_exp == 0 || s.n_ff_exp % 32)
    throw UsageError("constructed " + s.architecture + " model: the expert size " +
                     std::to_string(s.n_ff_exp) + " must be a positive multiple of 32");
}

}  // namespace

void set_constructed_tokenizer(GgufWriter& w, const ConstructedSpec& s) {
  // A planted text's words are tokens from kSmallVocab on.
  set_byte_tokenizer(w, s.vocab, kSmallVocab,
                     s.text.empty() ? std::vector<std::string>{} : planted_words(s.text));
}

uint32_t write_constructed_model(const std::string& path, const ConstructedSpec& s) {
  if (s.n_embd % s.n_head || s.n_head % s.n_head_kv || s.n_embd % 32)
    throw UsageError("constructed model: n_embd must be a multiple of 32 and of n_head");
  check_constructed_vocab(s.vocab);
  check_constructed_text(s);
  const uint32_t d = s.n_embd, kVocab = s.vocab;
  check_constructed_architecture(s.architecture);
  check_constructed_experts(s);
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
  if (mixture_of_experts(s.architecture)) {
    // qwen3moe reads the head size from attention.key_length (Qwen3's own heads are 128
    // wide, d / n_head or not): written as the hybrid does, d / n_head.
    layout.head_dim = d / s.n_head;
    layout.n_expert = s.n_expert;
    layout.n_expert_used = s.n_expert_used;
    layout.n_ff_exp = s.n_ff_exp;
  }
  if (s.architecture == "gpt-oss") {  // gpt-oss's own YaRN and window
    layout.yarn_scale = 32.0f;
    layout.yarn_n_ctx_orig = 4096;
    layout.sliding_window = 128;
  }
  GgufWriter w;
  set_llama_metadata(w, layout);
  w.set_u32("general.file_type", weight_preset(s.weights).file_type);  // llama_ftype
  set_constructed_tokenizer(w, s);

  std::mt19937_64 rng(s.seed);
  const std::vector<float> embd = constructed_embedding(s, rng);
  std::vector<float> out = constructed_output(s, embd);
  // The unused tokens beyond the small vocabulary embed as the other tokens outside the
  // cycle do (they lead into it) and get small output rows (logits of about ±0.3): they are
  // scored, and never win.
  const size_t first_unused = kSmallVocab + (s.text.empty() ? 0 : planted_words(s.text).size());
  {
    std::normal_distribution<float> small(0.0f, float(0.3 / double(d)));
    for (size_t t = first_unused; t < kVocab; ++t)
      for (uint32_t i = 0; i < d; ++i) out[t * d + i] = small(rng);
  }

  // The MTP layer's own LM head: the map on mtp_agreement of the cycle.
  std::vector<float> mtp_out;
  if (layout.mtp_output) {
    ConstructedSpec m = s;
    m.agreement = s.mtp_agreement;
    mtp_out = constructed_output(m, embd);
    std::copy(out.begin() + first_unused * d, out.end(), mtp_out.begin() + first_unused * d);
  }
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  // Norms (q/k norms too) are ones; attention, DeltaNet, FFN and expert matrices and the
  // router small Gaussians (kLayerScale): each token's router logits, drawn from its own
  // embedding, pick its own experts.
  for (const LlamaTensor& t : llama_tensors(layout)) {
    size_t n = 1;
    for (int64_t e : t.ne) n *= static_cast<size_t>(e);
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
      case LlamaTensorRole::kMatrix:    // 2-D, or a 3-D stack of experts
      case LlamaTensorRole::kRouter: {  // the router stays f32 under every preset
        std::normal_distribution<float> g(0.0f, float(kLayerScale / std::sqrt(double(t.ne[0]))));
        for (float& x : v) x = g(rng);
        const auto n_dims = static_cast<uint32_t>(t.ne.size());
        w.add_tensor_f32(t.name, constructed_tensor_type(s, t.name, t.ne[0], n_dims), t.ne,
                         v.data());
        break;
      }
      case LlamaTensorRole::kBias:     // gpt-oss's biases: small, as its matrices' outputs
      case LlamaTensorRole::kSinks: {  // and its sinks near 0: a softmax term of about e^0
        std::normal_distribution<float> g(0.0f, float(kLayerScale / std::sqrt(double(d))));
        for (float& x : v) x = g(rng);
        w.add_tensor_f32(t.name, GgmlType::kF32, t.ne, v.data());
        break;
      }
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
                "constructed-model 6\nname %s\nshape %u %u %u %u %u %u\nweights %s\n"
                "map_seed %llu\nagreement %.17g\nseed %llu\nvocab %u\narchitecture %s\n"
                "mtp_agreement %.17g\nexperts %u %u %u\n",
                s.name.c_str(), s.n_embd, s.n_layer, s.n_head, s.n_head_kv, s.n_ff, s.n_ctx,
                s.weights.c_str(), static_cast<unsigned long long>(s.map_seed), s.agreement,
                static_cast<unsigned long long>(s.seed), s.vocab, s.architecture.c_str(),
                s.mtp_agreement, s.n_expert, s.n_expert_used, s.n_ff_exp);
  return text + ("text " + std::to_string(s.text.size()) + "\n" + s.text + "\n");
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
