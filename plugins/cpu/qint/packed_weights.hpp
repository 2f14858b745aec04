// q4_K, q6_K and q8_0 weights kept in the layout of the AVX-512 column-interleaved kernels
// (qint_q4k_avx512.cpp, qint_q6k_avx512.cpp, qint_q8_0_avx512.cpp), made once when the host hands
// the matrix over (buffer_wrap_weights) instead of at every block of every forward. The same bytes
// as the GGUF rows, plus the padding of a short last group and of each group to 64 bytes.
//
// Group G is weight rows 16G .. 16G + 15 (rows past the matrix repeat its last row) and
// starts at G * group_bytes(row_bytes). Within it, "column" c is row 16G + c, and (h, l) =
// lane_of(c) says where the kernels keep it: half h of the 16 columns, qword lane l of a
// register (column_of in qint_interleave_avx512.hpp inverted).
//
// q4_K: block b at 2304 b (16 blocks of 144 bytes):
//   [64 i + 4 c, + 4)               i < 4: header dword i (d | dmin, then the 12 scale bytes);
//   [256 + 512 q + 64 i + 8 l, + 8)  q = 2 h + o (o < 2), i < 8: quant bytes 64 o + 8 i .. + 8.
// q6_K: block b at 3328 b, then the 16 columns' d of every block (32 bytes per block):
//   [64 i + 4 c, + 4)               i < 4: scale bytes 4 i .. 4 i + 3;
//   [256 + 64 (16 h + j) + 8 l, + 8) j < 16: low-nibble bytes 8 j .. 8 j + 7;
//   [2304 + 64 (8 h + j) + 8 l, + 8) j < 8: high-pair bytes 128 + 8 j .. + 8;
//   d of block b at 3328 nb + 32 b + 2 c (nb blocks per row).
// q8_0: blocks in pairs, pair t at 1088 t holding blocks 2 t + u (u < n, n = 2, or 1 for a
// last odd block), column c at dword c (no half or lane: the kernel needs no join):
//   [1088 t + 512 u + 64 i + 4 c, + 4)  i < 8: quant bytes 4 i .. 4 i + 3;
//   [1088 t + 512 n + 32 u + 2 c, + 2)  d.
// So every register a kernel reads is one aligned 64-byte load (q8_0's d: 32 bytes). Pure byte
// moves: every path that reads such a buffer as GGUF bytes (download, get_rows, matmul paths other
// than the kernels) gets its rows back unchanged with unpack_rows.
#pragma once

#include <cstdint>

#include "specd/backend.h"

namespace specd::cpu::packed_weights {

constexpr int64_t kGroup = 16;

// Whether matrices of `dtype` have a packed layout.
constexpr bool packs(specd_dtype dtype) {
  return dtype == SPECD_DTYPE_Q4_K || dtype == SPECD_DTYPE_Q6_K || dtype == SPECD_DTYPE_Q8_0;
}

// Bytes of one group of 16 rows of `row_bytes` (a multiple of 64).
constexpr int64_t group_bytes(int64_t row_bytes) {
  return (kGroup * row_bytes + 63) / 64 * 64;
}

// Bytes of the packed form of `rows` rows of `row_bytes` (whole groups).
constexpr int64_t packed_bytes(int64_t rows, int64_t row_bytes) {
  return (rows + kGroup - 1) / kGroup * group_bytes(row_bytes);
}

// Packs `rows` GGUF rows of `dtype` (packs(dtype); `row_bytes` each, whole blocks) at `src`
// into `dst` (packed_bytes(rows, row_bytes) bytes, 64-byte aligned).
void pack(specd_dtype dtype, const uint8_t* src, int64_t rows, int64_t row_bytes, uint8_t* dst);

// Rows [first, first + count) of a packed matrix in GGUF layout, count * row_bytes bytes at
// `dst`.
void unpack_rows(specd_dtype dtype, const uint8_t* packed, int64_t row_bytes, int64_t first,
                 int64_t count, uint8_t* dst);

}  // namespace specd::cpu::packed_weights
