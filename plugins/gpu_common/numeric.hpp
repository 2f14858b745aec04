// Element decoding and mask logic shared by the kernels and the host-side unit test. Plain
// functions of their arguments (host and device), so the index arithmetic the kernels rely on
// can be checked on a machine without a GPU.
#pragma once

#include <stdint.h>

#include "compat.hpp"
#include "specd/cpp/ggml_blocks.hpp"

namespace specd::gpu {

using ggml::bf16_to_f32;
using ggml::bits_to_f32;
using ggml::f16_to_f32;
using ggml::f32_to_bits;
using ggml::load_u16;

using ggml::kF16;
using ggml::kF32;
using ggml::kQ8_0;

// Element c of a weight row of dtype DT, as f32: the SDK's one decoder (ggml_blocks.hpp),
// bit-identical to llama.cpp's dequantization and to the CPU backend's.
template <uint32_t DT>
SPECD_HD inline float load_element(const uint8_t* row, int64_t c) {
  if constexpr (DT == kF32) {
    return reinterpret_cast<const float*>(row)[c];
  } else {
    return ggml::element<DT>(row, c);
  }
}

// Calls f(DtypeTag<DT>{}) for a weight dtype id validated on the host (ggml::visit_type's).
template <uint32_t DT>
struct DtypeTag {
  static constexpr uint32_t value = DT;
};

template <class F>
inline void visit_weight_dtype(uint32_t dtype, F&& f) {
  ggml::visit_type(dtype, [&](auto tag) { f(DtypeTag<decltype(tag)::value>{}); });
}

// Element `col` of a KV row of `dtype` (f32, f16, or q8_0 in 32-value blocks), decoded exactly:
// the value an f32 row would hold.
SPECD_HD inline float kv_value(const uint8_t* row, uint32_t dtype, int64_t col) {
  if (dtype == kF16) return ggml::load_f16(row + 2 * col);
  if (dtype == kQ8_0) {
    const uint8_t* block = row + col / 32 * 34;
    return ggml::load_f16(block) * static_cast<float>(static_cast<int8_t>(block[2 + col % 32]));
  }
  float v;
  __builtin_memcpy(&v, row + 4 * col, 4);
  return v;
}

// Byte offset of element `col` (a multiple of 32 for q8_0) in a KV row of `dtype`.
SPECD_HD inline int64_t kv_byte_offset(uint32_t dtype, int64_t col) {
  return dtype == kF16 ? 2 * col : dtype == kQ8_0 ? col / 32 * 34 : 4 * col;
}

// The attention mask of one query row (backend.h, specd_attention_mask), as read from device
// memory. `extra` points at the whole extra_slots row (n_extra_cols entries, may be null).
struct MaskRow {
  int64_t prefix;
  int64_t begin;  // extra_begin[i]
  int64_t end;    // extra_begin[i + 1]
};

// True when row `row` of the mask is valid for a cache of `capacity` rows: the same rules the
// CPU backend checks on the host (prefix in range, extras strictly increasing from prefix and
// below capacity, at least one key, extra_begin[0] = 0 and inside extra_slots).
SPECD_HD inline bool mask_row_ok(const MaskRow& r, int64_t row, const int32_t* extra,
                                 int64_t n_extra_cols, int64_t capacity) {
  if (r.prefix < 0 || r.prefix > capacity) return false;
  if (r.begin < 0 || r.end < r.begin || r.end > n_extra_cols) return false;
  if (row == 0 && r.begin != 0) return false;
  if (r.prefix + (r.end - r.begin) == 0) return false;
  int64_t last = r.prefix - 1;
  for (int64_t e = r.begin; e < r.end; ++e) {
    if (extra[e] <= last || extra[e] >= capacity) return false;
    last = extra[e];
  }
  return true;
}

// Cache row of the j-th key (logical order) of a validated mask row.
SPECD_HD inline int64_t key_slot(const MaskRow& r, const int32_t* extra, int64_t j) {
  return j < r.prefix ? j : static_cast<int64_t>(extra[r.begin + (j - r.prefix)]);
}

SPECD_HD inline int64_t key_count(const MaskRow& r) {
  return r.prefix + (r.end - r.begin);
}

// The first of a row's `n_keys` keys (logical order) that a sliding window of `window` keys
// lets it attend (backend.h, ABI 0.8): its last `window` keys; 0 = every key.
SPECD_HD inline int64_t window_first(int64_t n_keys, uint32_t window) {
  return window != 0 && n_keys > static_cast<int64_t>(window) ? n_keys - window : 0;
}

}  // namespace specd::gpu
