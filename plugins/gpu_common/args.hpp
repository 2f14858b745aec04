// Plain argument blocks passed by value from the host-side device to the kernel launchers.
// Pointers are device pointers; strides are in elements of the pointed-to type unless named
// `_bytes`.
#pragma once

#include <stdint.h>

namespace specd::gpu {

// A validated 2-D view: `rows` rows of `cols` elements, rows `stride_bytes` apart.
struct Mat {
  uint8_t* p = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride_bytes = 0;
  uint32_t dtype = 0;
};

// y[m, n] = x[m, k] · w[n, k]ᵀ; x, y f32.
struct GemmArgs {
  const float* x;
  const uint8_t* w;  // rows ldw_bytes apart, dtype `dtype`
  float* y;
  int64_t m, n, k;
  int64_t ldx, ldw_bytes, ldy;
  uint32_t dtype;
};

// RoPE as backend.h defines it (x is the Mat passed beside it).
struct RopeArgs {
  const int32_t* positions;   // [m]
  const float* freq_factors;  // [n_rot / 2], or null
  int n_head, head_dim, n_rot;
  int neox;  // pairs (j, j + n_rot/2) instead of (2j, 2j+1)
  float base, freq_scale;
  // YaRN (ABI 0.8), from sdk::rope_yarn: pair j mixes in the unscaled angle by
  // ext_factor (1 - clamp((j - yarn_lo) / yarn_span, 0, 1)); cos and sin are times mscale.
  double ext_factor, yarn_lo, yarn_span, mscale;
};

// Attention over the KV cache; see backend.h. Mask arrays are int32 device rows.
struct AttentionArgs {
  const float* q;
  const uint8_t* k;  // rows of kv_dtype (f32, or a pool's f16 / q8_0), ldk / ldv bytes apart
  const uint8_t* v;
  float* out;
  int64_t ldq, ldo;       // in floats
  int64_t ldk, ldv;       // in bytes
  uint32_t kv_dtype;      // SPECD_DTYPE_F32, _F16 or _Q8_0
  const int32_t* prefix;  // [m]
  const int32_t* begin;   // [m + 1]
  const int32_t* extra;   // [n_extra_cols], may be null when n_extra_cols is 0
  int64_t n_extra_cols;
  int64_t capacity;  // rows of the caches (the pools' rows when paged)
  // Paged (attention_paged): logical row s of query row i is pool row
  // table[table_begin[i] + s / block_rows] * block_rows + s % block_rows; table null: row s.
  const int32_t* table;
  const int32_t* table_begin;  // [m]
  int64_t n_table, block_rows;
  int64_t m;
  int n_head, n_head_kv, head_dim;
  float scale;
  // ABI 0.8: each row attends the last `window` keys of its sequence (0: all); sinks: one f32
  // per query head in the softmax's denominator, or null.
  uint32_t window;
  const float* sinks;
  int* error;  // set to nonzero by a block whose mask row (or table) is invalid
};

// A gated DeltaNet call (backend.h, gated_delta_net); the views were validated. `c` [m, C] and
// `work` [n_value_heads * head_dim^2] are device scratch.
struct DeltaNetArgs {
  Mat qkv, alpha, beta, conv_weight, dt_bias, a, conv_states, ssm_states, out;
  const int32_t* state_in;   // [m]
  const int32_t* state_out;  // [m]
  float* c;
  float* work;
  int64_t m;
  int64_t n_key_heads, n_value_heads, head_dim, conv_kernel;
  float eps;
};

}  // namespace specd::gpu
