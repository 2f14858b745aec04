#include "models/hyperparameters.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace specd {

int32_t positive_int_key(const GgufFile& f, const std::string& key) {
  const uint32_t v = f.get_u32(key);
  if (v == 0 || v > (1u << 30))
    throw Error(f.path() + ": " + key + " = " + std::to_string(v) + " is out of range");
  return static_cast<int32_t>(v);
}

int32_t positive_int_key_or(const GgufFile& f, const std::string& key, int32_t fallback) {
  return f.has(key) ? positive_int_key(f, key) : fallback;
}

float positive_float_key_or(const GgufFile& f, const std::string& key, float fallback) {
  const float v = f.get_f32_opt(key).value_or(fallback);
  // A NaN, infinite, zero or negative base or epsilon turns every logit into NaN.
  if (!std::isfinite(v) || v <= 0.0f)
    throw Error(f.path() + ": " + key + " = " + std::to_string(v) + " must be a finite number > 0");
  return v;
}

int32_t ffn_length(const GgufFile& f, const std::string& a, bool experts) {
  const std::string key = a + "feed_forward_length";
  if (experts && f.get_u32_opt(key).value_or(0) == 0) return 0;
  return positive_int_key(f, key);
}

MoeShape read_moe_shape(const GgufFile& f, const std::string& a, const Architecture& arch,
                        int32_t n_ff) {
  // A cap far above any released model's (Qwen3-MoE 128, DeepSeek 256) that keeps a hostile
  // count from sizing the routing buffers.
  constexpr int32_t kMaxExperts = 4096;
  MoeShape m;
  m.n_expert = positive_int_key(f, a + "expert_count");
  m.n_used = positive_int_key(f, a + "expert_used_count");
  if (m.n_expert > kMaxExperts)
    throw Error(f.path() + ": " + a + "expert_count " + std::to_string(m.n_expert) + " is above " +
                std::to_string(kMaxExperts));
  if (m.n_used > m.n_expert)
    throw Error(f.path() + ": " + a + "expert_used_count " + std::to_string(m.n_used) +
                " is more than " + a + "expert_count " + std::to_string(m.n_expert));
  const std::string exp_key = a + "expert_feed_forward_length",
                    shared_key = a + "expert_shared_feed_forward_length";
  m.n_ff = n_ff > 0 ? positive_int_key_or(f, exp_key, std::max(1, n_ff / m.n_used))
                    : positive_int_key(f, exp_key);
  if (arch.shared_expert)
    m.n_ff_shared =
        n_ff > 0 ? positive_int_key_or(f, shared_key, n_ff) : positive_int_key(f, shared_key);
  m.routing = arch.experts;
  m.activation = arch.expert_activation;
  m.biases = arch.expert_biases;
  return m;
}

RopeScaling rope_scaling(const GgufFile& f, const std::string& a, int32_t n_ctx_train) {
  const std::string type_key = a + "rope.scaling.type";
  const std::string type = f.get_string_opt(type_key).value_or("linear");
  if (type != "none" && type != "linear" && type != "yarn")
    throw Error(f.path() + ": " + type_key + " = '" + type +
                "' is not supported (none, linear and yarn are)");
  auto refuse_unless = [&](const std::string& key, float expected) {
    if (auto v = f.get_f32_opt(a + key); v && *v != expected)
      throw Error(f.path() + ": " + a + key + " = " + std::to_string(*v) +
                  " is not supported (only " + std::to_string(expected) + ")");
  };
  refuse_unless("rope.scaling.attn_factor", 1.0f);
  std::string factor_key = a + "rope.scaling.factor";
  if (!f.has(factor_key)) factor_key = a + "rope.scale_linear";
  const float factor = f.get_f32_opt(factor_key).value_or(0.0f);
  if (!std::isfinite(factor) || factor < 0.0f)
    throw Error(f.path() + ": " + factor_key + " = " + std::to_string(factor) +
                " must be a finite number >= 0");
  RopeScaling r;
  if (type == "none" || factor == 0.0f) return r;
  r.freq_scale = 1.0f / factor;
  if (!std::isfinite(r.freq_scale))
    throw Error(f.path() + ": " + factor_key + " = " + std::to_string(factor) + " is too small");
  if (type != "yarn") return r;
  // Below 1 YaRN's magnitude term 1 + 0.1 ln(factor) would shrink q and k (llama.cpp clamps it).
  if (factor < 1.0f)
    throw Error(f.path() + ": " + factor_key + " = " + std::to_string(factor) +
                " must be at least 1 for yarn scaling");
  refuse_unless("rope.scaling.yarn_log_multiplier", 0.0f);
  refuse_unless("rope.scaling.yarn_ext_factor", 1.0f);
  refuse_unless("rope.scaling.yarn_attn_factor", 1.0f);
  r.yarn.ext_factor = 1.0f;  // llama.cpp's default for YaRN
  r.yarn.n_ctx_orig =
      positive_int_key_or(f, a + "rope.scaling.original_context_length", n_ctx_train);
  r.yarn.beta_fast = positive_float_key_or(f, a + "rope.scaling.yarn_beta_fast", 32.0f);
  r.yarn.beta_slow = positive_float_key_or(f, a + "rope.scaling.yarn_beta_slow", 1.0f);
  return r;
}

}  // namespace specd
