#include "models/kv_layout.hpp"

namespace specd {

int64_t kv_row_bytes(int64_t kv_dim) {
  const int64_t bytes = kv_dim * 4;
  return bytes % 1024 == 0 ? bytes + 128 : bytes;
}

View kv_rows(const Buffer& buffer, int64_t rows, int64_t kv_dim) {
  return buffer.view(SPECD_DTYPE_F32, rows, kv_dim, 0, kv_row_bytes(kv_dim));
}

}  // namespace specd
