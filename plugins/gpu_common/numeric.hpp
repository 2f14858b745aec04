// Element decoding and mask logic shared by the kernels and the host-side unit test. Plain
// functions of their arguments (host and device), so the index arithmetic the kernels rely on
// can be checked on a machine without a GPU.
#pragma once

#include <stdint.h>

#include "compat.hpp"

namespace specd::gpu {

constexpr int64_t kQ8Block = 32;       // elements per q8_0 block
constexpr int64_t kQ8BlockBytes = 34;  // f16 scale + 32 int8

SPECD_HD inline float bits_to_float(uint32_t bits) {
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

SPECD_HD inline uint32_t float_to_bits(float f) {
  uint32_t bits;
  __builtin_memcpy(&bits, &f, 4);
  return bits;
}

// IEEE binary16 to f32, exact. Subnormals are renormalised through one exact f32 subtraction
// instead of a loop (F. Giesen's method), so the kernel has no data-dependent branches.
SPECD_HD inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t o = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t exp = o & 0x0f800000u;  // the f16 exponent field, shifted
  o += (127u - 15u) << 23;
  if (exp == 0x0f800000u) {  // inf / nan
    o += (128u - 16u) << 23;
  } else if (exp == 0) {  // zero / subnormal: mant * 2^-24, exactly
    o += 1u << 23;
    o = float_to_bits(bits_to_float(o) - bits_to_float(113u << 23));
  }
  return bits_to_float(o | sign);
}

SPECD_HD inline float bf16_to_f32(uint16_t h) {
  return bits_to_float(static_cast<uint32_t>(h) << 16);
}

SPECD_HD inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, 2);  // callers guarantee 2-byte alignment (validated views)
  return v;
}

// Element c of a q8_0 row: d * q, exact in f32 (11-bit by 8-bit significands).
SPECD_HD inline float q8_0_element(const uint8_t* row, int64_t c) {
  const uint8_t* block = row + (c / kQ8Block) * kQ8BlockBytes;
  const float d = f16_to_f32(load_u16(block));
  const int8_t q = static_cast<int8_t>(block[2 + c % kQ8Block]);
  return d * static_cast<float>(q);
}

// Dtype ids as template parameters (ggml ids, backend.h).
enum : int { kF32 = 0, kF16 = 1, kQ8_0 = 8, kBF16 = 30 };

template <int DT>
SPECD_HD inline float load_element(const uint8_t* row, int64_t c) {
  if constexpr (DT == kF32) {
    return reinterpret_cast<const float*>(row)[c];
  } else if constexpr (DT == kF16) {
    return f16_to_f32(load_u16(row + 2 * c));
  } else if constexpr (DT == kBF16) {
    return bf16_to_f32(load_u16(row + 2 * c));
  } else {
    return q8_0_element(row, c);
  }
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

}  // namespace specd::gpu
