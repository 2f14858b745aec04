#include "bench/weight_presets.hpp"

#include "common/error.hpp"

namespace specd::bench {
namespace {

using T = GgmlType;

const std::vector<WeightPreset>& presets() {
  static const std::vector<WeightPreset> all = {
      {"f32", T::kF32, 0},          {"f16", T::kF16, 1},        {"bf16", T::kBF16, 32},
      {"q8_0", T::kQ8_0, 7},        {"q6_K", T::kQ6_K, 18},     {"q5_K_M", T::kQ5_K, 17},
      {"q5_K_S", T::kQ5_K, 16},     {"q5_1", T::kQ5_1, 9},      {"q5_0", T::kQ5_0, 8},
      {"q4_K_M", T::kQ4_K, 15},     {"q4_K_S", T::kQ4_K, 14},   {"q4_1", T::kQ4_1, 3},
      {"q4_0", T::kQ4_0, 2},        {"iq4_xs", T::kIQ4_XS, 30}, {"iq4_nl", T::kIQ4_NL, 25},
      {"mxfp4_moe", T::kMXFP4, 38},  // llama.h's LLAMA_FTYPE_MOSTLY_MXFP4_MOE
      {"q3_K_L", T::kQ3_K, 13},     {"q3_K_M", T::kQ3_K, 12},   {"q3_K_S", T::kQ3_K, 11},
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

// attn_v: more bits for the presets that raise it (GQA shares one V among heads).
T attn_v_type(const WeightPreset& p, int layer, const TensorShape& s) {
  const std::string& f = p.name;
  const int n = static_cast<int>(s.n_layer);
  if (f == "q2_K") return s.n_gqa >= 4 ? T::kQ4_K : T::kQ3_K;
  if (f == "q3_K_M") return layer < 2 ? T::kQ5_K : T::kQ4_K;
  if (f == "q3_K_L") return T::kQ5_K;
  if ((f == "iq4_nl" || f == "iq4_xs") && s.n_gqa >= 4) return T::kQ5_K;
  if ((f == "q4_K_M" || f == "q5_K_M") && use_more_bits(layer, n)) return T::kQ6_K;
  if (f == "q4_K_S" && layer < 4) return T::kQ5_K;
  return p.base;
}

// ffn_down, a dense layer's or the experts' ffn_down_exps alike (llama.cpp's FFN_DOWN
// category is any name containing "ffn_down"; the layer is read from the name).
T ffn_down_type(const WeightPreset& p, int layer, const TensorShape& s) {
  const std::string& f = p.name;
  const int n = static_cast<int>(s.n_layer);
  if (f == "q2_K") return T::kQ3_K;
  if (f == "q3_K_M") return layer < n / 16 ? T::kQ5_K : T::kQ4_K;
  if (f == "q3_K_L") return T::kQ5_K;
  if (f == "q4_K_M" && use_more_bits(layer, n)) return T::kQ6_K;
  if ((f == "iq4_nl" || f == "iq4_xs") && layer < n / 8) return T::kQ5_K;
  if (f == "q5_K_M" && use_more_bits(layer, n)) return T::kQ6_K;
  if (f == "q4_K_S" && layer < n / 8) return T::kQ5_K;
  return p.base;
}

// attn_output: an 8-expert model (Mixtral's shape) gets q5_K under the low-bit presets in
// place of the dense rules.
T attn_output_type(const WeightPreset& p, const TensorShape& s) {
  const std::string& f = p.name;
  if (s.n_expert == 8) {
    const bool raised = f == "q2_K" || f == "q3_K_S" || f == "q3_K_M" || f == "iq4_nl" ||
                        f == "q4_K_S" || f == "q4_K_M" || f == "iq4_xs";
    return raised ? T::kQ5_K : p.base;
  }
  if (f == "q2_K") return T::kQ3_K;
  if (f == "q3_K_M") return T::kQ4_K;
  if (f == "q3_K_L") return T::kQ5_K;
  return p.base;
}

T attn_qkv_type(const WeightPreset& p) {
  const std::string& f = p.name;
  if (f == "q3_K_M" || f == "q3_K_L") return T::kQ4_K;
  if (f == "q4_K_M") return T::kQ5_K;
  if (f == "q5_K_M") return T::kQ6_K;
  return p.base;
}

// The preset's rules before the row-length fallback (llama-quant.cpp's
// llama_tensor_get_type_impl, the branches for the presets above).
T wanted_type(const WeightPreset& p, const std::string& t, const TensorShape& s) {
  if (p.base == T::kF32 || p.base == T::kF16 || p.base == T::kBF16) return p.base;
  // MXFP4_MOE: the expert stacks (ne[2] > 1, i.e. 3-D: ffn_{gate,up,down}_exps) in mxfp4,
  // every other converted tensor, output.weight and token_embd included, in q8_0. A dense
  // model is therefore q8_0 throughout, as llama-quantize makes it.
  if (p.base == T::kMXFP4) return s.n_dims >= 3 ? T::kMXFP4 : T::kQ8_0;
  if (t == "output.weight") return p.base == T::kQ8_0 ? T::kQ8_0 : T::kQ6_K;
  const int layer = layer_of(t);
  if (layer < 0) return p.base;  // token_embd and anything outside the blocks
  // An 8-expert model's attn_v and attn_k go to q8_0 whatever the preset: beside its experts
  // they are small, so the extra bits cost little. Other expert counts have no such rule.
  if (has(t, ".attn_v.")) return s.n_expert == 8 ? T::kQ8_0 : attn_v_type(p, layer, s);
  if (has(t, ".attn_k.")) return s.n_expert == 8 ? T::kQ8_0 : p.base;
  if (has(t, ".ffn_down")) return ffn_down_type(p, layer, s);
  if (has(t, ".attn_output.")) return attn_output_type(p, s);
  if (has(t, ".attn_qkv.")) return attn_qkv_type(p);
  return p.base;  // attn_q, ffn_gate, ffn_up and the experts' gate and up stacks
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

bool preset_converts(const std::string& tensor, const TensorShape& shape) {
  // As llama-quantize: matrices named *.weight (gpt-oss's 2-D expert biases stay f32).
  const std::string_view suffix = ".weight";
  return shape.n_dims >= 2 && !has(tensor, ".ffn_gate_inp.") && tensor.size() > suffix.size() &&
         tensor.compare(tensor.size() - suffix.size(), suffix.size(), suffix) == 0;
}

GgmlType preset_tensor_type(const WeightPreset& preset, const std::string& tensor,
                            const TensorShape& shape) {
  if (!preset_converts(tensor, shape)) return T::kF32;
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
    default:  // q8_0, mxfp4 (llama-quantize has no fallback for them and stops)
      break;
  }
  return fits(type) ? type : T::kF16;
}

}  // namespace specd::bench
