// Row-wise ops of the CPU backend. Every output row depends on its own input row only and is
// computed by one thread in a fixed order, so results do not depend on m or the thread count.
#pragma once

#include "gemm/gemm_kernels.hpp"
#include "runtime/cpu_buffer.hpp"
#include "runtime/thread_pool.hpp"
#include "specd/cpp/op_contract.hpp"

namespace specd::cpu {

void rms_norm(ThreadPool& pool, const Mat& x, const Mat& weight, float eps, const Mat& y);
// RoPE as backend.h defines it; freq_factors (n_rot / 2 values) may be null; `yarn` from
// sdk::rope_yarn (the default: none).
struct RopeSpec {
  uint32_t n_head, head_dim, n_rot;
  float base;
  bool neox;
  float freq_scale;
  const float* freq_factors;
  sdk::RopeYarn yarn = {};
};
void rope(ThreadPool& pool, const Mat& x, const int32_t* positions, const RopeSpec& p);
void get_rows(ThreadPool& pool, const Mat& table, const int32_t* ids, const Mat& y);
void swiglu(ThreadPool& pool, const Mat& gate, const Mat& up, const Mat& y);
// gpt-oss's clamped SwiGLU (backend.h, swiglu_oai); y may be gate or up.
void swiglu_oai(ThreadPool& pool, const Mat& gate, const Mat& up, float alpha, float limit,
                const Mat& y);
// b is [m, n] or one row [1, n] added to every row.
void add(ThreadPool& pool, const Mat& a, const Mat& b, const Mat& y);
// Rows moved in increasing i with memmove, so in-place compaction towards the front works.
void copy_rows(const Mat& src, const int32_t* indices, const Mat& dst, int64_t row_bytes);
// dst[indices[i]] = src[i]: row_bytes each, verbatim (same dtype), or f32 rows encoded as
// dst's f16 or q8_0 (kv_rows.hpp).
void set_rows(const Mat& src, const int32_t* indices, const Mat& dst, int64_t row_bytes);

// Query rows of the mask, already validated: row i attends its logical cache rows (k and v
// f32, or a pool's f16 or q8_0 rows, decoded exactly: kv_rows.hpp)
// [0, prefix[i]) then extra[begin[i] .. begin[i+1]). Without a table (`table` null) logical
// row s is row s of k and v; with one (paged, attention_paged) it is row
// table[table_begin[i] + s / block_rows] * block_rows + s % block_rows.
struct MaskRows {
  const int32_t* prefix;
  const int32_t* begin;
  const int32_t* extra;
  const int32_t* table = nullptr;
  const int32_t* table_begin = nullptr;
  int64_t block_rows = 0;
};
// The ABI 0.8 options of an attention call (backend.h): each row attends only the last
// `window` keys of its sequence (0: all of them); `sinks` (null: none) holds one f32 sink
// per query head.
struct AttentionExtras {
  uint32_t window = 0;
  const float* sinks = nullptr;
};
// `kernel` (the device's GEMM kernel) picks the instruction set; the bits are the same.
void attention(ThreadPool& pool, GemmKernel kernel, const Mat& q, const Mat& k, const Mat& v,
               const MaskRows& mask, const specd_attention_params& p, const AttentionExtras& x,
               const Mat& out);

}  // namespace specd::cpu
