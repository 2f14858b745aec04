#include "models/kv_layout.hpp"

namespace specd {

int64_t kv_row_bytes(int64_t kv_dim, specd_dtype dtype) {
  const int64_t bytes = static_cast<int64_t>(dtype_row_bytes(dtype, kv_dim));
  return bytes % 1024 == 0 ? bytes + 128 : bytes;
}

}  // namespace specd
