#include "writers/llama_writer.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "models/architecture.hpp"
#include "models/architectures/architectures.hpp"
#include "tokenizer/unicode.hpp"

namespace specd {

namespace {

int64_t head_dim_of(const LlamaLayout& l) {
  if (l.n_head == 0 || (l.head_dim == 0 && l.n_embd % l.n_head != 0))
    throw Error("llama writer: n_embd must be a multiple of n_head (or head_dim given)");
  return l.head_dim ? l.head_dim : l.n_embd / l.n_head;
}

// A mixture of experts' gate and up stacks: ffn_gate_exps and ffn_up_exps {d, F_e, E}, or
// one ffn_gate_up_exps {d, 2 F_e, E}.
void gate_up_experts(std::vector<LlamaTensor>& t, const std::string& p, const LlamaLayout& l) {
  const int64_t d = l.n_embd, fe = l.n_ff_exp, E = l.n_expert;
  if (l.fused_gate_up_exps) {
    t.push_back({p + "ffn_gate_up_exps.weight", {d, 2 * fe, E}, LlamaTensorRole::kMatrix});
    return;
  }
  t.push_back({p + "ffn_gate_exps.weight", {d, fe, E}, LlamaTensorRole::kMatrix});
  t.push_back({p + "ffn_up_exps.weight", {d, fe, E}, LlamaTensorRole::kMatrix});
}

// A hybrid architecture's tensors (qwen35, qwen35moe).
std::vector<LlamaTensor> hybrid_tensors(const LlamaLayout& l, const Architecture& arch) {
  const int64_t d = l.n_embd, f = l.n_ff, head_dim = head_dim_of(l);
  const int64_t q = l.n_head * head_dim, kv = l.n_head_kv * head_dim;
  const int64_t S = l.ssm_head_dim, hv = l.ssm_value_heads, vd = hv * S;
  const int64_t C = (2 * static_cast<int64_t>(l.ssm_key_heads) + hv) * S;
  using R = LlamaTensorRole;
  std::vector<LlamaTensor> t = {{"token_embd.weight", {d, l.vocab}, R::kEmbedding}};
  auto attention = [&](const std::string& p) {
    t.push_back({p + "attn_q.weight", {d, 2 * q}, R::kMatrix});
    t.push_back({p + "attn_k.weight", {d, kv}, R::kMatrix});
    t.push_back({p + "attn_v.weight", {d, kv}, R::kMatrix});
    t.push_back({p + "attn_q_norm.weight", {head_dim}, R::kNorm});
    t.push_back({p + "attn_k_norm.weight", {head_dim}, R::kNorm});
    t.push_back({p + "attn_output.weight", {q, d}, R::kMatrix});
  };
  auto ffn = [&](const std::string& p) {
    t.push_back({p + "post_attention_norm.weight", {d}, R::kNorm});
    if (arch.experts != ExpertRouting::kNone) {
      const int64_t E = l.n_expert, fe = l.n_ff_exp, fs = l.n_ff_shared;
      t.push_back({p + "ffn_gate_inp.weight", {d, E}, R::kRouter});
      gate_up_experts(t, p, l);
      t.push_back({p + "ffn_down_exps.weight", {fe, d, E}, R::kMatrix});
      t.push_back({p + "ffn_gate_inp_shexp.weight", {d}, R::kRouter});
      t.push_back({p + "ffn_gate_shexp.weight", {d, fs}, R::kMatrix});
      t.push_back({p + "ffn_up_shexp.weight", {d, fs}, R::kMatrix});
      t.push_back({p + "ffn_down_shexp.weight", {fs, d}, R::kMatrix});
      return;
    }
    t.push_back({p + "ffn_gate.weight", {d, f}, R::kMatrix});
    t.push_back({p + "ffn_up.weight", {d, f}, R::kMatrix});
    t.push_back({p + "ffn_down.weight", {f, d}, R::kMatrix});
  };
  for (uint32_t i = 0; i < l.n_layer + l.n_nextn; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    t.push_back({p + "attn_norm.weight", {d}, R::kNorm});
    if (i < l.n_layer && (i + 1) % l.full_attention_interval != 0) {
      t.push_back({p + "attn_qkv.weight", {d, C}, R::kMatrix});
      t.push_back({p + "attn_gate.weight", {d, vd}, R::kMatrix});
      t.push_back({p + "ssm_conv1d.weight", {l.ssm_conv, C}, R::kConv});
      t.push_back({p + "ssm_dt.bias", {hv}, R::kDecayBias});
      t.push_back({p + "ssm_a", {hv}, R::kDecay});
      t.push_back({p + "ssm_alpha.weight", {d, hv}, R::kMatrix});
      t.push_back({p + "ssm_beta.weight", {d, hv}, R::kMatrix});
      t.push_back({p + "ssm_norm.weight", {S}, R::kNorm});
      t.push_back({p + "ssm_out.weight", {vd, d}, R::kMatrix});
    } else {
      attention(p);
    }
    ffn(p);
    if (i >= l.n_layer) {
      t.push_back({p + "nextn.eh_proj.weight", {2 * d, d}, R::kMtpProjection});
      t.push_back({p + "nextn.enorm.weight", {d}, R::kNorm});
      t.push_back({p + "nextn.hnorm.weight", {d}, R::kNorm});
      t.push_back({p + "nextn.shared_head_norm.weight", {d}, R::kNorm});
      if (l.mtp_output)
        t.push_back({p + "nextn.shared_head_head.weight", {d, l.vocab}, R::kOutput});
    }
  }
  t.push_back({"output_norm.weight", {d}, R::kNorm});
  if (!l.tied_output) t.push_back({"output.weight", {d, l.vocab}, R::kOutput});
  return t;
}

}  // namespace

std::vector<LlamaTensor> llama_tensors(const LlamaLayout& l) {
  const Architecture* found = find_architecture(l.architecture);
  const Architecture& arch = found ? *found : architectures::kLlama;
  if (arch.hybrid) return hybrid_tensors(l, arch);
  const int64_t d = l.n_embd, f = l.n_ff, head_dim = head_dim_of(l);
  const int64_t q = l.n_head * head_dim, kv = l.n_head_kv * head_dim;
  using R = LlamaTensorRole;
  std::vector<LlamaTensor> t = {{"token_embd.weight", {d, l.vocab}, R::kEmbedding}};
  if (l.rope_freqs) {
    if (arch.rope_freqs == Presence::kAbsent)
      throw Error("llama writer: architecture " + l.architecture + " has no rope_freqs");
    t.push_back({"rope_freqs.weight", {head_dim / 2}, R::kRopeFactors});
  }
  for (uint32_t i = 0; i < l.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    t.push_back({p + "attn_norm.weight", {d}, R::kNorm});
    if (arch.fused_qkv == Presence::kRequired ||
        (arch.fused_qkv == Presence::kOptional && !l.separate_qkv)) {
      t.push_back({p + "attn_qkv.weight", {d, q + 2 * kv}, R::kMatrix});
    } else {
      t.push_back({p + "attn_q.weight", {d, q}, R::kMatrix});
      t.push_back({p + "attn_k.weight", {d, kv}, R::kMatrix});
      t.push_back({p + "attn_v.weight", {d, kv}, R::kMatrix});
    }
    if (arch.qkv_bias == Presence::kRequired ||
        (arch.qkv_bias == Presence::kOptional && l.qkv_bias)) {
      t.push_back({p + "attn_q.bias", {q}, R::kBias});
      t.push_back({p + "attn_k.bias", {kv}, R::kBias});
      t.push_back({p + "attn_v.bias", {kv}, R::kBias});
    }
    if (arch.qk_norm == Presence::kRequired) {
      t.push_back({p + "attn_q_norm.weight", {head_dim}, R::kNorm});
      t.push_back({p + "attn_k_norm.weight", {head_dim}, R::kNorm});
    }
    t.push_back({p + "attn_output.weight", {q, d}, R::kMatrix});
    if (arch.output_bias == Presence::kRequired)
      t.push_back({p + "attn_output.bias", {d}, R::kBias});
    if (arch.attention_sinks == Presence::kRequired)
      t.push_back({p + "attn_sinks.weight", {l.n_head}, R::kSinks});
    t.push_back({p + (arch.post_attention_norm ? "post_attention_norm.weight" : "ffn_norm.weight"),
                 {d},
                 R::kNorm});
    if (arch.experts != ExpertRouting::kNone) {
      const int64_t E = l.n_expert, fe = l.n_ff_exp;
      t.push_back({p + "ffn_gate_inp.weight", {d, E}, R::kRouter});
      if (arch.expert_biases) t.push_back({p + "ffn_gate_inp.bias", {E}, R::kBias});
      gate_up_experts(t, p, l);
      t.push_back({p + "ffn_down_exps.weight", {fe, d, E}, R::kMatrix});
      if (arch.expert_biases) {
        t.push_back({p + "ffn_gate_exps.bias", {fe, E}, R::kBias});
        t.push_back({p + "ffn_up_exps.bias", {fe, E}, R::kBias});
        t.push_back({p + "ffn_down_exps.bias", {d, E}, R::kBias});
      }
      continue;
    }
    if (arch.fused_gate_up) {
      t.push_back({p + "ffn_up.weight", {d, 2 * f}, R::kMatrix});
    } else {
      t.push_back({p + "ffn_gate.weight", {d, f}, R::kMatrix});
      t.push_back({p + "ffn_up.weight", {d, f}, R::kMatrix});
    }
    t.push_back({p + "ffn_down.weight", {f, d}, R::kMatrix});
  }
  t.push_back({"output_norm.weight", {d}, R::kNorm});
  if (!l.tied_output) t.push_back({"output.weight", {d, l.vocab}, R::kOutput});
  return t;
}

void set_llama_metadata(GgufWriter& w, const LlamaLayout& l) {
  const int64_t head_dim = head_dim_of(l);
  const std::string a = l.architecture + ".";
  w.set_string("general.architecture", l.architecture);
  w.set_string("general.name", l.name);
  w.set_u32(a + "context_length", l.n_ctx);
  w.set_u32(a + "embedding_length", l.n_embd);
  const Architecture* arch = find_architecture(l.architecture);
  const bool hybrid = arch && arch->hybrid;
  w.set_u32(a + "block_count", l.n_layer + (hybrid ? l.n_nextn : 0));
  // llama.cpp's converter writes no dense width for qwen35moe: its FFNs are all experts.
  if (!arch || !arch->shared_expert) w.set_u32(a + "feed_forward_length", l.n_ff);
  w.set_u32(a + "attention.head_count", l.n_head);
  w.set_u32(a + "attention.head_count_kv", l.n_head_kv);
  if (l.head_dim) {
    w.set_u32(a + "attention.key_length", l.head_dim);
    w.set_u32(a + "attention.value_length", l.head_dim);
  }
  const uint32_t rope_dim = l.rope_dim ? l.rope_dim : static_cast<uint32_t>(head_dim);
  w.set_u32(a + "rope.dimension_count", rope_dim);
  w.set_f32(a + "rope.freq_base", 10000.0f);
  if (l.rope_scale > 0.0f) {
    w.set_string(a + "rope.scaling.type", "linear");
    w.set_f32(a + "rope.scaling.factor", l.rope_scale);
  }
  if (l.yarn_scale > 0.0f) {
    w.set_string(a + "rope.scaling.type", "yarn");
    w.set_f32(a + "rope.scaling.factor", l.yarn_scale);
    w.set_u32(a + "rope.scaling.original_context_length", l.yarn_n_ctx_orig);
  }
  if (arch && arch->sliding_window_period > 0)
    w.set_u32(a + "attention.sliding_window", l.sliding_window);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32(a + "vocab_size", l.vocab);
  if (arch && arch->experts != ExpertRouting::kNone) {
    w.set_u32(a + "expert_count", l.n_expert);
    w.set_u32(a + "expert_used_count", l.n_expert_used);
    w.set_u32(a + "expert_feed_forward_length", l.n_ff_exp);
    if (arch->shared_expert) w.set_u32(a + "expert_shared_feed_forward_length", l.n_ff_shared);
  }
  if (!hybrid) return;
  // Interleaved MRoPE sections as Qwen3.5 writes them, scaled to rope_dim / 2 pairs.
  const uint32_t pairs = rope_dim / 2, t = (pairs * 11 + 31) / 32, h = (pairs * 11 + 31) / 32;
  w.set(a + "rope.dimension_sections",
        GgufValue::int32_array({static_cast<int32_t>(t), static_cast<int32_t>(h),
                                static_cast<int32_t>(pairs - std::min(pairs, t + h)), 0}));
  w.set_u32(a + "ssm.conv_kernel", l.ssm_conv);
  w.set_u32(a + "ssm.state_size", l.ssm_head_dim);
  w.set_u32(a + "ssm.group_count", l.ssm_key_heads);
  w.set_u32(a + "ssm.time_step_rank", l.ssm_value_heads);
  w.set_u32(a + "ssm.inner_size", l.ssm_value_heads * l.ssm_head_dim);
  w.set_u32(a + "full_attention_interval", l.full_attention_interval);
  if (l.n_nextn) w.set_u32(a + "nextn_predict_layers", l.n_nextn);
}

std::vector<float> sample_rope_factors(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) v[j] = j < n / 2 ? 1.0f : static_cast<float>(2 + j - n / 2);
  return v;
}

void set_one_layer_metadata(GgufWriter& w, const std::string& architecture, const std::string& name,
                            uint32_t n_ctx, int64_t n_embd, int64_t n_ff) {
  const std::string a = architecture + ".";
  w.set_string("general.architecture", architecture);
  w.set_string("general.name", name);
  w.set_u32(a + "context_length", n_ctx);
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(n_embd));
  w.set_u32(a + "block_count", 1);
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(n_ff));
}

void set_byte_tokenizer(GgufWriter& w, uint32_t vocab, uint32_t first_word,
                        const std::vector<std::string>& words) {
  if (vocab < 258) throw Error("llama writer: a byte tokenizer needs at least 258 tokens");
  if (first_word < 258 || first_word > vocab || words.size() > vocab - first_word)
    throw Error("llama writer: " + std::to_string(words.size()) + " word tokens from id " +
                std::to_string(first_word) + " do not fit a byte tokenizer of " +
                std::to_string(vocab) + " tokens");
  auto spelled = [](const std::string& bytes) {
    std::string spelling;
    for (char c : bytes) utf8_append(spelling, gpt2_byte_to_codepoint(static_cast<uint8_t>(c)));
    return spelling;
  };
  std::vector<std::string> tokens = {"<s>", "</s>"};
  std::vector<int32_t> types = {3, 3};  // control
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(spelled(std::string(1, static_cast<char>(b))));
    types.push_back(1);  // normal
  }
  for (uint32_t i = 0; tokens.size() < vocab; ++i) {
    const size_t id = tokens.size();
    const bool word = id >= first_word && id - first_word < words.size();
    tokens.push_back(word ? spelled(words[id - first_word]) : "[PAD" + std::to_string(i) + "]");
    types.push_back(word ? 1 : 5);  // normal, unused
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
