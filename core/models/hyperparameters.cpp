#include "models/hyperparameters.hpp"

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

float rope_freq_scale(const GgufFile& f, const std::string& a) {
  const std::string type_key = a + "rope.scaling.type";
  const std::string type = f.get_string_opt(type_key).value_or("linear");
  if (type != "none" && type != "linear")
    throw Error(f.path() + ": " + type_key + " = '" + type +
                "' is not supported (none and linear are)");
  const std::string attn_key = a + "rope.scaling.attn_factor";
  if (auto af = f.get_f32_opt(attn_key); af && *af != 1.0f)
    throw Error(f.path() + ": " + attn_key + " = " + std::to_string(*af) +
                " is not supported (only 1)");
  std::string factor_key = a + "rope.scaling.factor";
  if (!f.has(factor_key)) factor_key = a + "rope.scale_linear";
  const float factor = f.get_f32_opt(factor_key).value_or(0.0f);
  if (!std::isfinite(factor) || factor < 0.0f)
    throw Error(f.path() + ": " + factor_key + " = " + std::to_string(factor) +
                " must be a finite number >= 0");
  if (type == "none" || factor == 0.0f) return 1.0f;
  return 1.0f / factor;
}

}  // namespace specd
