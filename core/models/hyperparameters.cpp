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

}  // namespace specd
