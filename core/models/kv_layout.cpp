#include "models/kv_layout.hpp"

#include "common/error.hpp"

namespace specd {

specd_dtype kv_dtype(const std::string& name) {
  if (name.empty() || name == "f32") return SPECD_DTYPE_F32;
  if (name == "f16") return SPECD_DTYPE_F16;
  if (name == "q8_0") return SPECD_DTYPE_Q8_0;
  throw UsageError("KV cache type '" + name + "' is not one of f32, f16, q8_0");
}

int64_t kv_row_bytes(int64_t kv_dim, specd_dtype dtype) {
  const int64_t bytes = static_cast<int64_t>(dtype_row_bytes(dtype, kv_dim));
  return bytes % 1024 == 0 ? bytes + 128 : bytes;
}

}  // namespace specd
