#include "bench/weight_presets.hpp"

#include "common/error.hpp"

namespace specd::bench {
namespace {

using T = GgmlType;

const std::vector<WeightPreset>& presets() {
  static const std::vector<WeightPreset> all = {
      {"f32", T::kF32, 0},      {"f16", T::kF16, 1},        {"bf16", T::kBF16, 32},
      {"q8_0", T::kQ8_0, 7},    {"q6_K", T::kQ6_K, 18},     {"q5_K_M", T::kQ5_K, 17},
      {"q5_K_S", T::kQ5_K, 16}, {"q5_1", T::kQ5_1, 9},      {"q5_0", T::kQ5_0, 8},
      {"q4_K_M", T::kQ4_K, 15}, {"q4_K_S", T::kQ4_K, 14},   {"q4_1", T::kQ4_1, 3},
      {"q4_0", T::kQ4_0, 2},    {"iq4_xs", T::kIQ4_XS, 30}, {"iq4_nl", T::kIQ4_NL, 25},
      {"q3_K_L", T::kQ3_K, 13}, {"q3_K_M", T::kQ3_K, 12},   {"q3_K_S", T::kQ3_K, 11},
      {"q2_K", T::kQ2_K, 10},
  };
  return all;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers, every third between.
bool use_more_bits(int layer, int n) {
  return layer < n / 8 || layer >= 7 * n / 8 || (layer - n / 8) % 3 == 2;
}

// The layer of "blk.N.…", or -1.
int layer_of(const std::string& tensor) {
  if (tensor.rfind("blk.", 0) != 0) return -1;
  const size_t end = tensor.find('.', 4);
  try {
    return std::stoi(tensor.substr(4, end - 4));
  } catch (const std::exception&) {
    return -1;
  }
}

bool has(const std::string& tensor, const char* part) {
  return tensor.find(part) != std::string::npos;
}

// The preset's rules before the row-length fallback.
T wanted_type(const WeightPreset& p, const std::string& t, const TensorShape& s) {
  const std::string& f = p.name;
  const int layer = layer_of(t), n = static_cast<int>(s.n_layer);
  if (p.base == T::kF32 || p.base == T::kF16 || p.base == T::kBF16) return p.base;
  if (t == "output.weight") return p.base == T::kQ8_0 ? T::kQ8_0 : T::kQ6_K;
  if (layer < 0) return p.base;  // token_embd and anything outside the blocks
  if (has(t, ".attn_v.")) {
    if (f == "q2_K") return s.n_gqa >= 4 ? T::kQ4_K : T::kQ3_K;
    if (f == "q3_K_M") return layer < 2 ? T::kQ5_K : T::kQ4_K;
    if (f == "q3_K_L") return T::kQ5_K;
    if ((f == "iq4_nl" || f == "iq4_xs") && s.n_gqa >= 4) return T::kQ5_K;
    if ((f == "q4_K_M" || f == "q5_K_M") && use_more_bits(layer, n)) return T::kQ6_K;
    if (f == "q4_K_S" && layer < 4) return T::kQ5_K;
  } else if (has(t, ".ffn_down.")) {
    if (f == "q2_K") return T::kQ3_K;
    if (f == "q3_K_M") return layer < n / 16 ? T::kQ5_K : T::kQ4_K;
    if (f == "q3_K_L") return T::kQ5_K;
    if (f == "q4_K_M" && use_more_bits(layer, n)) return T::kQ6_K;
    if ((f == "iq4_nl" || f == "iq4_xs") && layer < n / 8) return T::kQ5_K;
    if (f == "q5_K_M" && use_more_bits(layer, n)) return T::kQ6_K;
    if (f == "q4_K_S" && layer < n / 8) return T::kQ5_K;
  } else if (has(t, ".attn_output.")) {
    if (f == "q2_K") return T::kQ3_K;
    if (f == "q3_K_M") return T::kQ4_K;
    if (f == "q3_K_L") return T::kQ5_K;
  } else if (has(t, ".attn_qkv.")) {
    if (f == "q3_K_M" || f == "q3_K_L") return T::kQ4_K;
    if (f == "q4_K_M") return T::kQ5_K;
    if (f == "q5_K_M") return T::kQ6_K;
  }
  return p.base;
}

}  // namespace

const std::vector<std::string>& weight_preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const WeightPreset& p : presets()) out.push_back(p.name);
    return out;
  }();
  return names;
}

WeightPreset weight_preset(const std::string& name) {
  for (const WeightPreset& p : presets())
    if (p.name == name || lower(p.name) == lower(name)) return p;
  std::string list;
  for (const std::string& n : weight_preset_names()) list += (list.empty() ? "" : ", ") + n;
  throw UsageError("weight type '" + name + "' is not one of " + list);
}

GgmlType preset_tensor_type(const WeightPreset& preset, const std::string& tensor,
                            const TensorShape& shape) {
  if (shape.n_dims != 2) return T::kF32;
  T type = wanted_type(preset, tensor, shape);
  const auto fits = [&](T t) {
    return shape.row_length % ggml_type_info(static_cast<uint32_t>(t))->block_size == 0;
  };
  if (fits(type)) return type;
  switch (type) {  // llama-quantize's fallback for rows that are not whole 256-blocks
    case T::kQ2_K:
    case T::kQ3_K:
    case T::kIQ4_XS:
      type = T::kIQ4_NL;
      break;
    case T::kQ4_K:
      type = T::kQ5_0;
      break;
    case T::kQ5_K:
      type = T::kQ5_1;
      break;
    case T::kQ6_K:
      type = T::kQ8_0;
      break;
    default:
      break;
  }
  return fits(type) ? type : T::kF16;
}

}  // namespace specd::bench
