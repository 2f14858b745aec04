// The row layout of KV cache buffers: one row per cached token, n_head_kv * head_dim values of
// the cache's dtype (f32, f16 or q8_0: [engine] kv_type), rows kv_row_bytes apart.
//
// Rows whose size is a multiple of 1 KiB would put a KV head's slice of every row into the same
// few sets of the L1 cache, which is indexed by address bits 6..11 (a head's 256-byte slices of
// 2 KiB rows fall into 8 of its 64 sets), so attention, which reads one head's slice of many rows
// and reads them again for each query row of a verification pass, missed L1 on nearly every
// line. Such rows get 128 bytes of padding (6% more cache memory for 2 KiB rows). On the
// constructed 95 M Q4_K_M model at 2 threads, after 900 committed tokens, a forward of 8 rows
// took 0.78-0.79x as long and one row 0.88-0.96x (ARCHITECTURE.md, "KV cache rows"). Every
// backend reads cache rows through the view's row_stride.
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.hpp"

namespace specd {

// Bytes from one cache row to the next for kv_dim values of `dtype` per row.
int64_t kv_row_bytes(int64_t kv_dim, specd_dtype dtype = SPECD_DTYPE_F32);

// The dtype of a KV cache type name ([engine] kv_type): "f32", "f16" or "q8_0"; "" is f32.
// Throws UsageError for another name.
specd_dtype kv_dtype(const std::string& name);

}  // namespace specd
