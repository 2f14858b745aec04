// specd SDK — each backend op's contract (backend.h), written once.
//
// What a call's arguments must satisfy whatever the backend: the shape rules of every op
// (templates over a backend's own matrix type M, anything with rows, cols and dtype) and,
// in namespace `contract`, one entry point per op that checks a call as it arrives: views
// and parameter structs present and large enough, shapes, scalar parameters, dtype
// relations. The SDK's backend adapter (backend.hpp) runs the entry point before the
// device's method, so a backend checks only what is its own: that each view lies inside
// its buffer and has a dtype it supports (check_view_extent), and index values that live in
// its memory (check_row_ids, check_attention_mask, check_kv_pages, check_scatter_ids).
// Every function throws PluginError(SPECD_STATUS_INVALID_ARGUMENT) reading "<op>: ...".
// Pure; [any thread].
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "specd/backend.h"
#include "specd/cpp/ggml_blocks.hpp"
#include "specd/cpp/host.hpp"

namespace specd::sdk {

// Bytes of one row of `cols` elements of `dtype`, or 0 for an unknown dtype or a quantized
// row that is not a whole number of blocks (block layouts: ggml_blocks.hpp).
inline uint64_t dtype_row_bytes(specd_dtype dtype, int64_t cols) {
  if (dtype == SPECD_DTYPE_I32) return static_cast<uint64_t>(cols) * 4;
  return ggml::row_bytes(dtype, cols);
}

inline const char* dtype_name(specd_dtype dtype) {
  return dtype == SPECD_DTYPE_I32 ? "i32" : ggml::type_name(dtype);
}

// Throws "<op>: <b_name> is [r, c] but <a_name> is [r, c]" unless `a` and `b` (views, or a
// backend's own matrix type: anything with rows and cols) have the same shape. [any thread]
template <class A, class B>
void check_same_shape(const A& a, const B& b, const char* op, const char* a_name,
                      const char* b_name) {
  if (a.rows != b.rows || a.cols != b.cols)
    throw invalid_argument(std::string(op) + ": " + b_name + " is [" + std::to_string(b.rows) +
                           ", " + std::to_string(b.cols) + "] but " + a_name + " is [" +
                           std::to_string(a.rows) + ", " + std::to_string(a.cols) + "]");
}

// Throws unless bytes [offset, offset + size) lie inside a buffer of `buffer_size` bytes
// (uploads, downloads, copies). [any thread]
inline void check_range(const char* op, uint64_t offset, uint64_t size, uint64_t buffer_size) {
  if (offset > buffer_size || size > buffer_size - offset)
    throw invalid_argument(std::string(op) + ": range [" + std::to_string(offset) + ", +" +
                           std::to_string(size) + ") outside a buffer of " +
                           std::to_string(buffer_size) + " bytes");
}

// The shape rules of `matmul` (backend.h) for a backend's matrix type M: x [m, k],
// w [n, k], y [m, n]. Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_matmul_shapes(const M& x, const M& w, const M& y) {
  if (w.cols != x.cols)
    throw invalid_argument("matmul: x has k = " + std::to_string(x.cols) +
                           " but w has k = " + std::to_string(w.cols));
  if (y.rows != x.rows || y.cols != w.rows)
    throw invalid_argument("matmul: y is [" + std::to_string(y.rows) + ", " +
                           std::to_string(y.cols) + "], expected [" + std::to_string(x.rows) +
                           ", " + std::to_string(w.rows) + "]");
}

// The shape rules of `get_rows`: ids [1, m] for y [m, d], table [rows, d]. [any thread]
template <class M>
void check_get_rows_shapes(const M& table, const M& ids, const M& y) {
  if (ids.rows != 1 || ids.cols != y.rows)
    throw invalid_argument("get_rows: ids must be [1, m] for y [m, d]");
  if (y.cols != table.cols) throw invalid_argument("get_rows: y and table differ in cols");
}

// The shape rules of `copy_rows`: src and dst of one dtype and width, indices [1, m] for
// dst [m, n]. [any thread]
template <class M>
void check_copy_rows_shapes(const M& src, const M& indices, const M& dst) {
  if (src.dtype != dst.dtype || src.cols != dst.cols)
    throw invalid_argument("copy_rows: src and dst differ in dtype or cols");
  if (indices.rows != 1 || indices.cols != dst.rows)
    throw invalid_argument("copy_rows: indices must be [1, m] for dst [m, n]");
}

// Row indices read on the host: each of ids[0, n) must be in [0, rows). Throws
// "<op>: <what> <id> at <i> outside [0, <rows>)". [any thread]
inline void check_row_ids(const char* op, const char* what, const int32_t* ids, int64_t n,
                          int64_t rows) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= rows)
      throw invalid_argument(std::string(op) + ": " + what + " " + std::to_string(ids[i]) + " at " +
                             std::to_string(i) + " outside [0, " + std::to_string(rows) + ")");
}

// The ABI 0.2 and 0.8 fields of `rope` params (backend.h), or their earlier meaning (normal
// mode, no scaling, no factors, no YaRN) when struct_size ends before them: a 0.2 .. 0.7
// host's params are 40 bytes. Pure; [any thread].
struct RopeOptions {
  uint32_t mode = SPECD_ROPE_NORMAL;
  float freq_scale = 1.0f;
  const specd_view* freq_factors = nullptr;  // borrowed from the params
  // YaRN (ABI 0.8): ext_factor 0 is none; attn_factor is 1 for a zeroed field.
  float ext_factor = 0.0f;
  float attn_factor = 1.0f;
  float beta_fast = 0.0f, beta_slow = 0.0f;
  uint32_t n_ctx_orig = 0;
};
inline RopeOptions rope_options(const specd_rope_params& p) {
  RopeOptions o;
  if (p.struct_size >= offsetof(specd_rope_params, freq_factors) + sizeof(p.freq_factors)) {
    o.mode = p.mode;
    o.freq_scale = p.freq_scale == 0.0f ? 1.0f : p.freq_scale;  // 0: no scaling
    o.freq_factors = p.freq_factors;
  }
  if (p.struct_size >= offsetof(specd_rope_params, n_ctx_orig) + sizeof(p.n_ctx_orig)) {
    o.ext_factor = p.ext_factor;
    o.attn_factor = p.attn_factor == 0.0f ? 1.0f : p.attn_factor;  // 0: no magnitude scaling
    o.beta_fast = p.beta_fast;
    o.beta_slow = p.beta_slow;
    o.n_ctx_orig = p.n_ctx_orig;
  }
  return o;
}

// What YaRN (backend.h, specd_rope_params) makes of a call's options, worked out once per call
// in double so that every backend ramps the same pairs: pair j's angle is
//   theta_i (1 - ramp(j)) + theta_e ramp(j),
//   ramp(j) = ext_factor (1 - clamp((j - lo) / span, 0, 1)),
// and its cos and sin are multiplied by mscale. Without YaRN (ext_factor 0) ramp is 0 and
// mscale is attn_factor alone: the 0.2 angle, and exactly 0.2's cos and sin when it is 1.
struct RopeYarn {
  double ext_factor = 0.0;
  double lo = 0.0, span = 1.0;  // span = max(0.001, hi - lo)
  double mscale = 1.0;
  double ramp(uint32_t j) const {
    if (ext_factor == 0.0) return 0.0;
    const double y = (static_cast<double>(j) - lo) / span;
    return ext_factor * (1.0 - std::min(1.0, std::max(0.0, y)));
  }
};

// The pair index c(beta) at which a wavelength fits `beta` times into the original context:
// n_rot ln(n_ctx_orig / (2 pi beta)) / (2 ln base) (YaRN's correction dimension).
inline double rope_yarn_corr_dim(uint32_t n_rot, uint32_t n_ctx_orig, double beta, double base) {
  constexpr double kPi = 3.14159265358979323846;
  return n_rot * std::log(n_ctx_orig / (2.0 * kPi * beta)) / (2.0 * std::log(base));
}

// The YaRN of a call: `p` and its rope_options `o`, already checked (check_rope_yarn).
inline RopeYarn rope_yarn(const specd_rope_params& p, const RopeOptions& o) {
  RopeYarn y;
  y.mscale = o.attn_factor;
  if (o.ext_factor == 0.0f) return y;
  y.ext_factor = o.ext_factor;
  // Interpolation shrinks attention logits; YaRN scales cos and sin back up.
  y.mscale *= 1.0 + 0.1 * std::log(1.0 / static_cast<double>(o.freq_scale));
  // Pairs below lo (fast, many turns in the original context) keep their angle; pairs above
  // hi (slow) are interpolated; the ramp mixes the two in between.
  const double lo =
      std::max(0.0, std::floor(rope_yarn_corr_dim(p.n_rot, o.n_ctx_orig, o.beta_fast, p.base)));
  const double hi =
      std::min(static_cast<double>(p.n_rot) - 1.0,
               std::ceil(rope_yarn_corr_dim(p.n_rot, o.n_ctx_orig, o.beta_slow, p.base)));
  y.lo = lo;
  y.span = std::max(0.001, hi - lo);
  return y;
}

// The YaRN fields of `rope` params (ABI 0.8): attn_factor finite and > 0 (0 in the struct
// means 1), ext_factor finite and, when it is not 0, what the correction dimensions need to
// be finite: n_ctx_orig > 0, beta_fast and beta_slow finite and > 0, base finite and > 1.
// Throws INVALID_ARGUMENT. [any thread]
inline void check_rope_yarn(const specd_rope_params& p, const RopeOptions& o) {
  auto fail = [](const std::string& what) { throw invalid_argument("rope: " + what); };
  if (!std::isfinite(o.attn_factor) || !(o.attn_factor > 0.0f))
    fail("attn_factor " + std::to_string(o.attn_factor) + " must be 0 (none) or finite and > 0");
  if (!std::isfinite(o.ext_factor))
    fail("ext_factor " + std::to_string(o.ext_factor) + " must be finite");
  if (o.ext_factor == 0.0f) return;
  auto positive = [](float v) { return std::isfinite(v) && v > 0.0f; };
  if (o.n_ctx_orig == 0 || !positive(o.beta_fast) || !positive(o.beta_slow))
    fail("YaRN (ext_factor != 0) needs n_ctx_orig > 0 and finite beta_fast, beta_slow > 0");
  if (!std::isfinite(p.base) || !(p.base > 1.0f))
    fail("YaRN (ext_factor != 0) needs a finite base > 1");
}

// The shape rules of `rope` (backend.h), for a backend's own matrix type M (anything with
// rows and cols): the params' size, even head_dim and n_rot <= min(head_dim, 1024), the
// YaRN fields (check_rope_yarn), x of n_head * head_dim columns, positions [1, m]. Throws
// INVALID_ARGUMENT. [any thread]
template <class M>
void check_rope_shapes(const M& x, const M& positions, const specd_rope_params& p) {
  auto fail = [](const std::string& what) { throw invalid_argument("rope: " + what); };
  if (p.struct_size < offsetof(specd_rope_params, mode)) fail("params struct_size too small");
  const RopeOptions o = rope_options(p);
  if (o.mode != SPECD_ROPE_NORMAL && o.mode != SPECD_ROPE_NEOX)
    fail("mode " + std::to_string(o.mode) + " is neither SPECD_ROPE_NORMAL nor SPECD_ROPE_NEOX");
  if (!(o.freq_scale > 0.0f) || o.freq_scale > 3.0e38f)
    fail("freq_scale " + std::to_string(o.freq_scale) + " must be 0 (none) or finite and > 0");
  if (p.head_dim == 0 || p.head_dim % 2 || p.n_rot % 2 || p.n_rot > p.head_dim || p.n_rot > 1024)
    fail("need even head_dim and even n_rot <= min(head_dim, 1024)");
  check_rope_yarn(p, o);
  const int64_t cols = static_cast<int64_t>(p.n_head) * p.head_dim;
  if (cols != x.cols)
    fail("x has " + std::to_string(x.cols) +
         " cols, expected n_head * head_dim = " + std::to_string(cols));
  if (positions.rows != 1 || positions.cols != x.rows) fail("positions must be [1, m]");
}

// The shape rule of `rope`'s freq_factors (the backend's checked view of
// rope_options(p).freq_factors): f32 [1, n_rot / 2]. Their values (> 0) are the caller's
// to guarantee: they may live in device memory. Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_rope_factors_shape(const M& factors, const specd_rope_params& p) {
  if (factors.rows != 1 || factors.cols != static_cast<int64_t>(p.n_rot / 2))
    throw invalid_argument("rope: freq_factors is [" + std::to_string(factors.rows) + ", " +
                           std::to_string(factors.cols) +
                           "], expected [1, n_rot / 2 = " + std::to_string(p.n_rot / 2) + "]");
}

// The shape rules of `add`: y and a [m, n]; b [m, n] or, since ABI 0.2, one row [1, n]
// added to every row (a bias). Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_add_shapes(const M& a, const M& b, const M& y) {
  check_same_shape(a, y, "add", "a", "y");
  if (b.rows == 1 && b.cols == a.cols) return;
  check_same_shape(a, b, "add", "a", "b");
}

// The ABI 0.8 fields of `attention` params (backend.h), or their earlier meaning (every key,
// no sinks) when struct_size ends before them: a 0.1 .. 0.7 host's params are 20 bytes.
// Pure; [any thread].
struct AttentionOptions {
  uint32_t window = 0;                // 0: every key
  const specd_view* sinks = nullptr;  // borrowed from the params
};
inline AttentionOptions attention_options(const specd_attention_params& p) {
  AttentionOptions o;
  if (p.struct_size >= offsetof(specd_attention_params, sinks) + sizeof(p.sinks)) {
    o.window = p.window;
    o.sinks = p.sinks;
  }
  return o;
}

// The shape rules of `attention` (backend.h) for a backend's matrix type M: the params
// (n_head a positive multiple of n_head_kv, head_dim > 0), q and out [m, n_head * head_dim],
// the caches [capacity, n_head_kv * head_dim], mask.prefix_len [1, m] and mask.extra_begin
// [1, m + 1]. The mask's values are the backend's to check (they may be in device memory).
// Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_attention_shapes(const M& q, const M& k, const M& v, const M& out, const M& prefix_len,
                            const M& extra_begin, const specd_attention_params& p) {
  auto fail = [](const std::string& what) { throw invalid_argument("attention: " + what); };
  // The 0.1 layout is the least a host passes; the 0.8 fields are optional (attention_options).
  if (p.struct_size < offsetof(specd_attention_params, window))
    fail("params struct_size too small");
  if (p.n_head == 0 || p.n_head_kv == 0 || p.n_head % p.n_head_kv || p.head_dim == 0)
    fail("need n_head a positive multiple of n_head_kv and head_dim > 0");
  if (q.cols != static_cast<int64_t>(p.n_head) * p.head_dim) fail("q cols != n_head * head_dim");
  if (k.cols != static_cast<int64_t>(p.n_head_kv) * p.head_dim || v.cols != k.cols ||
      v.rows != k.rows)
    fail("k_cache/v_cache must be [capacity, n_head_kv * head_dim]");
  check_same_shape(q, out, "attention", "q", "out");
  if (prefix_len.rows != 1 || prefix_len.cols != q.rows) fail("mask.prefix_len must be [1, m]");
  if (extra_begin.rows != 1 || extra_begin.cols != q.rows + 1)
    fail("mask.extra_begin must be [1, m + 1]");
}

// The shape rules of attention's sinks (the backend's checked view of
// attention_options(p).sinks): f32 [1, n_head]. Their values are the caller's: any float,
// -inf for a head without a sink (they may live in device memory). Throws INVALID_ARGUMENT
// naming `op`. [any thread]
template <class M>
void check_attention_sinks_shape(const M& sinks, const specd_attention_params& p, const char* op) {
  if (sinks.dtype != SPECD_DTYPE_F32)
    throw invalid_argument(std::string(op) + ": params.sinks must be f32, not " +
                           dtype_name(sinks.dtype));
  if (sinks.rows != 1 || sinks.cols != static_cast<int64_t>(p.n_head))
    throw invalid_argument(std::string(op) + ": params.sinks is [" + std::to_string(sinks.rows) +
                           ", " + std::to_string(sinks.cols) +
                           "], expected [1, n_head = " + std::to_string(p.n_head) + "]");
}

// The shape rules of `attention_paged` (backend.h): attention's, with the pools in place of
// the caches, and pages.block_table [1, n] and pages.table_begin [1, m] int32 views checked
// by the caller into `table` and `table_begin`. Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_attention_paged_shapes(const M& q, const M& k, const M& v, const M& out,
                                  const M& prefix_len, const M& extra_begin, const M& table,
                                  const M& table_begin, const specd_kv_pages& pages,
                                  const specd_attention_params& p) {
  auto fail = [](const std::string& what) { throw invalid_argument("attention_paged: " + what); };
  if (pages.struct_size < sizeof(specd_kv_pages)) fail("pages struct_size too small");
  if (pages.block_rows == 0) fail("pages.block_rows must be at least 1");
  if (k.rows % pages.block_rows != 0)
    fail("the pools' " + std::to_string(k.rows) + " rows are not whole blocks of " +
         std::to_string(pages.block_rows));
  check_attention_shapes(q, k, v, out, prefix_len, extra_begin, p);
  if (table.rows != 1 || table.cols < 1) fail("pages.block_table must be [1, n], n >= 1");
  if (table_begin.rows != 1 || table_begin.cols != q.rows) fail("pages.table_begin must be [1, m]");
}

// The rules of an attention mask's values (backend.h, specd_attention_mask), for backends
// whose index views are host memory: extra_begin starts at 0 and never decreases, every row
// attends at least one key, a row's extra slots increase from its prefix_len on, and every
// slot is below limit(i), the logical rows row i may address (attention: the capacity;
// attention_paged: what its table covers). `extra` holds n_extra entries (may be null when
// extra_begin[m] is 0). Throws INVALID_ARGUMENT naming `op`. [any thread]
template <class Limit>
void check_attention_mask(const char* op, int64_t m, const int32_t* prefix, const int32_t* begin,
                          const int32_t* extra, int64_t n_extra, Limit&& limit) {
  auto fail = [&](const std::string& what) {
    throw invalid_argument(std::string(op) + ": " + what);
  };
  if (begin[0] != 0) fail("mask.extra_begin[0] must be 0");
  if (begin[m] > n_extra) fail("mask.extra_slots shorter than extra_begin[m]");
  for (int64_t i = 0; i < m; ++i) {
    const int64_t cap = limit(i);
    if (prefix[i] < 0 || prefix[i] > cap)
      fail("mask.prefix_len out of range at row " + std::to_string(i));
    if (begin[i + 1] < begin[i]) fail("mask.extra_begin not increasing");
    if (prefix[i] + begin[i + 1] - begin[i] == 0)
      fail("row " + std::to_string(i) + " attends no key");
    int64_t last = static_cast<int64_t>(prefix[i]) - 1;
    for (int32_t e = begin[i]; e < begin[i + 1]; ++e) {
      if (extra[e] <= last || extra[e] >= cap)
        fail("mask.extra_slots of row " + std::to_string(i) +
             " must increase, start at or after prefix_len and stay below capacity");
      last = extra[e];
    }
  }
}

// The rules of attention_paged's table values, for backends whose index views are host
// memory: every block id in [0, blocks), every table_begin in [0, n]; row i's table then
// covers (n - table_begin[i]) * block_rows logical rows (check_attention_mask's limit).
// Throws INVALID_ARGUMENT. [any thread]
inline void check_kv_pages(const int32_t* table, int64_t n, const int32_t* table_begin, int64_t m,
                           int64_t blocks) {
  for (int64_t b = 0; b < n; ++b)
    if (table[b] < 0 || table[b] >= blocks)
      throw invalid_argument("attention_paged: pages.block_table[" + std::to_string(b) +
                             "] = " + std::to_string(table[b]) + " is outside the pool's " +
                             std::to_string(blocks) + " blocks");
  for (int64_t i = 0; i < m; ++i)
    if (table_begin[i] < 0 || table_begin[i] > n)
      throw invalid_argument("attention_paged: pages.table_begin[" + std::to_string(i) +
                             "] is outside the table");
}

// The shape rules of `set_rows` (backend.h): src [m, n], indices [1, m], dst [rows, n] of
// src's dtype (or f16 / q8_0 for an f32 src: whether the backend converts is its own).
// Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_set_rows_shapes(const M& src, const M& indices, const M& dst) {
  auto fail = [](const std::string& what) { throw invalid_argument("set_rows: " + what); };
  if (indices.rows != 1 || indices.cols != src.rows) fail("indices must be [1, m]");
  if (src.cols != dst.cols) fail("src and dst differ in columns");
  const bool converts = src.dtype == SPECD_DTYPE_F32 &&
                        (dst.dtype == SPECD_DTYPE_F16 || dst.dtype == SPECD_DTYPE_Q8_0);
  if (src.dtype != dst.dtype && !converts)
    fail(std::string("cannot write ") + dtype_name(src.dtype) + " rows into " +
         dtype_name(dst.dtype) + " rows");
}

// set_rows' index values, for backends whose index views are host memory: each in
// [0, rows), no two equal. Throws INVALID_ARGUMENT. [any thread]
inline void check_scatter_ids(const int32_t* ids, int64_t m, int64_t rows) {
  check_row_ids("set_rows", "index", ids, m, rows);
  std::vector<int32_t> sorted(ids, ids + m);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 1; i < m; ++i)
    if (sorted[i] == sorted[i - 1])
      throw invalid_argument("set_rows: index " + std::to_string(sorted[i]) +
                             " appears twice (rows would be written twice)");
}

// The shape rules of `gated_delta_net` (backend.h, ABI 0.7) for a backend's matrix type M:
// qkv [m, C], alpha and beta [m, H_v], conv_weight [C, K], dt_bias and a [1, H_v], out
// [m, H_v S], conv_states [slots, (K - 1) C] and ssm_states [slots, H_v S S] with the same
// slots, state_in and state_out [1, m]; H_v a multiple of H_k, S >= 1, K >= 2, eps >= 0.
// Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_delta_net_shapes(const M& qkv, const M& alpha, const M& beta, const M& conv_weight,
                            const M& dt_bias, const M& a, const M& conv_states, const M& ssm_states,
                            const M& state_in, const M& state_out, const specd_delta_net_params& p,
                            const M& out) {
  auto fail = [](const std::string& what) { throw invalid_argument("gated_delta_net: " + what); };
  const int64_t hk = p.n_key_heads, hv = p.n_value_heads, S = p.head_dim, K = p.conv_kernel;
  if (hk < 1 || hv < 1 || hv % hk != 0)
    fail("n_value_heads must be a positive multiple of n_key_heads");
  if (S < 1) fail("head_dim must be >= 1");
  if (K < 2) fail("conv_kernel must be >= 2");
  if (!(p.eps >= 0)) fail("eps must be >= 0");
  const int64_t C = 2 * hk * S + hv * S, m = qkv.rows;
  auto shape = [&](const M& v, const char* name, int64_t rows, int64_t cols) {
    if (v.rows != rows || v.cols != cols)
      fail(std::string(name) + " is [" + std::to_string(v.rows) + ", " + std::to_string(v.cols) +
           "], expected [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  };
  shape(qkv, "qkv", m, C);
  shape(alpha, "alpha", m, hv);
  shape(beta, "beta", m, hv);
  shape(conv_weight, "conv_weight", C, K);
  shape(dt_bias, "dt_bias", 1, hv);
  shape(a, "a", 1, hv);
  shape(out, "out", m, hv * S);
  shape(conv_states, "conv_states", conv_states.rows, (K - 1) * C);
  shape(ssm_states, "ssm_states", conv_states.rows, hv * S * S);
  shape(state_in, "rows.state_in", 1, m);
  shape(state_out, "rows.state_out", 1, m);
}

// gated_delta_net's slot values, for backends whose index views are host memory: each in
// [0, slots) or -1; state_in[0] is not -1. Throws INVALID_ARGUMENT. [any thread]
inline void check_state_slots(const int32_t* state_in, const int32_t* state_out, int64_t m,
                              int64_t slots) {
  for (int64_t i = 0; i < m; ++i) {
    for (const int32_t* ids : {state_in, state_out})
      if (ids[i] < -1 || ids[i] >= slots)
        throw invalid_argument("gated_delta_net: slot " + std::to_string(ids[i]) + " at row " +
                               std::to_string(i) + " outside [0, " + std::to_string(slots) + ")");
    if (i == 0 && state_in[0] == -1)
      throw invalid_argument("gated_delta_net: row 0 has no state to start from (state_in -1)");
  }
}

namespace contract {

// The view an op received, present and as large as the ABI's struct (its other fields are
// the backend's to check against its buffers).
// Runs on every op call: the message is built only when the view fails.
inline const specd_view& view(const specd_view* v, const char* op, const char* arg) {
  if (v && v->struct_size >= sizeof(specd_view)) return *v;
  throw invalid_argument(std::string(op) + ": " + arg + ": " +
                         (v ? "struct_size too small" : "missing view"));
}

// The mask's extra_slots, when given, are one row.
inline void extra_slots(const specd_attention_mask& mask, const char* op) {
  if (mask.extra_slots && view(mask.extra_slots, op, "mask.extra_slots").rows != 1)
    throw invalid_argument(std::string(op) + ": mask.extra_slots must be [1, n]");
}

// A parameter struct the op needs, present and at least `size` bytes by its struct_size.
template <class T>
const T& params(const T* p, const char* op, const char* what, size_t size = sizeof(T)) {
  if (!p) throw invalid_argument(std::string(op) + ": missing " + what);
  if (p->struct_size < size)
    throw invalid_argument(std::string(op) + ": " + what + " struct_size too small");
  return *p;
}

inline void matmul(const specd_view* x, const specd_view* w, const specd_view* y) {
  check_matmul_shapes(view(x, "matmul", "x"), view(w, "matmul", "w"), view(y, "matmul", "y"));
}

// x, y [m, n]; weight [1, n]; eps >= 0.
inline void rms_norm(const specd_view* x, const specd_view* w, float eps, const specd_view* y) {
  const specd_view& xv = view(x, "rms_norm", "x");
  const specd_view& wv = view(w, "rms_norm", "weight");
  check_same_shape(xv, view(y, "rms_norm", "y"), "rms_norm", "x", "y");
  if (wv.rows != 1 || wv.cols != xv.cols) throw invalid_argument("rms_norm: weight must be [1, n]");
  if (!(eps >= 0)) throw invalid_argument("rms_norm: eps must be >= 0");
}

inline void rope(const specd_view* x, const specd_view* positions, const specd_rope_params* p) {
  const specd_rope_params& rp = params(p, "rope", "params", offsetof(specd_rope_params, mode));
  check_rope_shapes(view(x, "rope", "x"), view(positions, "rope", "positions"), rp);
  if (const specd_view* f = rope_options(rp).freq_factors)
    check_rope_factors_shape(view(f, "rope", "freq_factors"), rp);
}

inline void get_rows(const specd_view* table, const specd_view* ids, const specd_view* y) {
  check_get_rows_shapes(view(table, "get_rows", "table"), view(ids, "get_rows", "ids"),
                        view(y, "get_rows", "y"));
}

// Attention params of the 0.1 size or more (a host of any minor), and their sinks' shape
// when the params carry sinks.
inline const specd_attention_params& attention_params(const specd_attention_params* p,
                                                      const char* op) {
  const specd_attention_params& ap =
      params(p, op, "params", offsetof(specd_attention_params, window));
  if (const specd_view* s = attention_options(ap).sinks)
    check_attention_sinks_shape(view(s, op, "params.sinks"), ap, op);
  return ap;
}

// attention's shapes and its mask's extra_slots.
inline void attention(const specd_view* q, const specd_view* k, const specd_view* v,
                      const specd_attention_mask* mask, const specd_attention_params* p,
                      const specd_view* out) {
  const char* op = "attention";
  const specd_attention_mask& mk = params(mask, op, "mask");
  check_attention_shapes(view(q, op, "q"), view(k, op, "k_cache"), view(v, op, "v_cache"),
                         view(out, op, "out"), view(mk.prefix_len, op, "mask.prefix_len"),
                         view(mk.extra_begin, op, "mask.extra_begin"), attention_params(p, op));
  extra_slots(mk, op);
}

// attention's rules over the pools, one dtype for both pools, whole q8_0 blocks per head.
inline void attention_paged(const specd_view* q, const specd_view* k, const specd_view* v,
                            const specd_attention_mask* mask, const specd_kv_pages* pages,
                            const specd_attention_params* p, const specd_view* out) {
  const char* op = "attention_paged";
  const specd_attention_mask& mk = params(mask, op, "mask");
  const specd_kv_pages& pg = params(pages, op, "pages");
  const specd_attention_params& ap = attention_params(p, op);
  const specd_view& kv = view(k, op, "k_pool");
  const specd_view& vv = view(v, op, "v_pool");
  check_attention_paged_shapes(
      view(q, op, "q"), kv, vv, view(out, op, "out"), view(mk.prefix_len, op, "mask.prefix_len"),
      view(mk.extra_begin, op, "mask.extra_begin"), view(pg.block_table, op, "pages.block_table"),
      view(pg.table_begin, op, "pages.table_begin"), pg, ap);
  if (kv.dtype != vv.dtype)
    throw invalid_argument("attention_paged: k_pool and v_pool differ in dtype");
  if (kv.dtype == SPECD_DTYPE_Q8_0 && ap.head_dim % 32 != 0)
    throw invalid_argument(
        "attention_paged: q8_0 pools need head_dim a multiple of 32 (a head's values are whole "
        "blocks)");
  extra_slots(mk, op);
}

inline void swiglu(const specd_view* g, const specd_view* u, const specd_view* y) {
  const specd_view& gv = view(g, "swiglu", "gate");
  check_same_shape(gv, view(u, "swiglu", "up"), "swiglu", "gate", "up");
  check_same_shape(gv, view(y, "swiglu", "y"), "swiglu", "gate", "y");
}

inline void add(const specd_view* a, const specd_view* b, const specd_view* y) {
  check_add_shapes(view(a, "add", "a"), view(b, "add", "b"), view(y, "add", "y"));
}

inline void copy_rows(const specd_view* src, const specd_view* indices, const specd_view* dst) {
  check_copy_rows_shapes(view(src, "copy_rows", "src"), view(indices, "copy_rows", "indices"),
                         view(dst, "copy_rows", "dst"));
}

inline void set_rows(const specd_view* src, const specd_view* indices, const specd_view* dst) {
  check_set_rows_shapes(view(src, "set_rows", "src"), view(indices, "set_rows", "indices"),
                        view(dst, "set_rows", "dst"));
}

inline void gated_delta_net(const specd_view* qkv, const specd_view* alpha, const specd_view* beta,
                            const specd_view* conv_weight, const specd_view* dt_bias,
                            const specd_view* a, const specd_view* conv_states,
                            const specd_view* ssm_states, const specd_recurrent_rows* rows,
                            const specd_delta_net_params* p, const specd_view* out) {
  const char* op = "gated_delta_net";
  const specd_recurrent_rows& r = params(rows, op, "rows");
  check_delta_net_shapes(view(qkv, op, "qkv"), view(alpha, op, "alpha"), view(beta, op, "beta"),
                         view(conv_weight, op, "conv_weight"), view(dt_bias, op, "dt_bias"),
                         view(a, op, "a"), view(conv_states, op, "conv_states"),
                         view(ssm_states, op, "ssm_states"), view(r.state_in, op, "rows.state_in"),
                         view(r.state_out, op, "rows.state_out"), params(p, op, "params"),
                         view(out, op, "out"));
}

// x, gate, y [m, n].
inline void mul_sigmoid(const specd_view* x, const specd_view* gate, const specd_view* y) {
  const specd_view& xv = view(x, "mul_sigmoid", "x");
  check_same_shape(xv, view(gate, "mul_sigmoid", "gate"), "mul_sigmoid", "x", "gate");
  check_same_shape(xv, view(y, "mul_sigmoid", "y"), "mul_sigmoid", "x", "y");
}

// gate, up, y [m, n]; alpha finite; limit > 0 (+inf: no clamp).
inline void swiglu_oai(const specd_view* g, const specd_view* u, float alpha, float limit,
                       const specd_view* y) {
  const specd_view& gv = view(g, "swiglu_oai", "gate");
  check_same_shape(gv, view(u, "swiglu_oai", "up"), "swiglu_oai", "gate", "up");
  check_same_shape(gv, view(y, "swiglu_oai", "y"), "swiglu_oai", "gate", "y");
  if (!std::isfinite(alpha))
    throw invalid_argument("swiglu_oai: alpha " + std::to_string(alpha) + " must be finite");
  if (!(limit > 0.0f))
    throw invalid_argument("swiglu_oai: limit " + std::to_string(limit) + " must be > 0");
}

}  // namespace contract

}  // namespace specd::sdk
