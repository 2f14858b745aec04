// q4_K weights kept in the layout of the AVX-512 column-interleaved kernel
// (qint_q4k_avx512.cpp), made once when the host hands the matrix over (buffer_wrap_weights)
// instead of at every block of every forward. Same size as the GGUF bytes, plus the padding of
// a short last group.
//
// Group G is weight rows 16G .. 16G + 15 (rows past the matrix repeat its last row); it
// occupies the bytes of its 16 GGUF rows, block b at 2304 b (16 blocks of 144 bytes):
//   [64 i + 4 c, + 4)              i = 0..3: header dword i (d | dmin, then the 12 scale
//                                  bytes) of column c's block b: the 4 header fields of 16
//                                  columns, each one 64-byte register;
//   [256 + 512 q + 64 i + 8 c, + 8) q = 2 h + o (h, o = 0..1), i, c = 0..7: quant bytes
//                                  64 o + 8 i .. + 8 of column column_of(h, c)'s block b, i.e.
//                                  the kernel's 8 x 8 qword transpose of half h, already done.
// Pure byte moves: every path that reads such a buffer as GGUF bytes (download, get_rows,
// matmul paths other than the kernel) gets its rows back unchanged with unpack_rows.
#pragma once

#include <cstdint>

namespace specd::cpu::packed_q4k {

constexpr int64_t kGroup = 16;
constexpr int64_t kBlockBytes = 144;
constexpr int64_t kGroupBlockBytes = kGroup * kBlockBytes;

// Bytes of the packed form of `rows` rows of `row_bytes` (whole groups).
inline int64_t packed_bytes(int64_t rows, int64_t row_bytes) {
  return (rows + kGroup - 1) / kGroup * kGroup * row_bytes;
}

// Packs `rows` GGUF rows of q4_K (`row_bytes` each, a multiple of 144) at `src` into `dst`
// (packed_bytes(rows, row_bytes) bytes).
void pack(const uint8_t* src, int64_t rows, int64_t row_bytes, uint8_t* dst);

// Rows [first, first + count) of a packed matrix in GGUF layout, count * row_bytes bytes at
// `dst`.
void unpack_rows(const uint8_t* packed, int64_t row_bytes, int64_t first, int64_t count,
                 uint8_t* dst);

}  // namespace specd::cpu::packed_q4k
