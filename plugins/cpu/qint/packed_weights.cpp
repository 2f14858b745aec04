#include "qint/packed_weights.hpp"

#include <cstring>

namespace specd::cpu::packed_weights {
namespace {

// Where column `col` (0..15) of a group sits in the kernels' registers: half h and qword lane
// l, inverting column_of(h, l) = 4 (l >> 1) + 2 h + (l & 1) (qint_interleave_avx512.hpp).
struct Lane {
  int64_t h, l;
};
constexpr Lane lane_of(int64_t col) {
  return {(col >> 1) & 1, 2 * (col >> 2) + (col & 1)};
}

// One piece of a column's block: `bytes` at `gguf` in the GGUF block and at `packed` from the
// group's start.
struct Piece {
  int64_t gguf, packed, bytes;
};

// Calls f(piece) for every piece of column `col`'s block b of a row of nb blocks.
template <class F>
void q4k_pieces(int64_t col, int64_t b, int64_t, F f) {
  const Lane at = lane_of(col);
  const int64_t base = 2304 * b;
  for (int64_t i = 0; i < 4; ++i) f(Piece{4 * i, base + 64 * i + 4 * col, 4});
  for (int64_t j = 0; j < 16; ++j)  // o = j / 8, i = j % 8
    f(Piece{16 + 8 * j, base + 256 + 512 * (2 * at.h + j / 8) + 64 * (j % 8) + 8 * at.l, 8});
}

template <class F>
void q6k_pieces(int64_t col, int64_t b, int64_t nb, F f) {
  const Lane at = lane_of(col);
  const int64_t base = 3328 * b;
  for (int64_t i = 0; i < 4; ++i) f(Piece{192 + 4 * i, base + 64 * i + 4 * col, 4});
  for (int64_t j = 0; j < 16; ++j) f(Piece{8 * j, base + 256 + 64 * (16 * at.h + j) + 8 * at.l, 8});
  for (int64_t j = 0; j < 8; ++j)
    f(Piece{128 + 8 * j, base + 2304 + 64 * (8 * at.h + j) + 8 * at.l, 8});
  f(Piece{208, 3328 * nb + 32 * b + 2 * col, 2});
}

template <class F>
void q8_0_pieces(int64_t col, int64_t b, int64_t nb, F f) {
  const int64_t pair = 1088 * (b / 2), u = b % 2, n = b / 2 * 2 + 1 < nb ? 2 : 1;
  for (int64_t i = 0; i < 8; ++i) f(Piece{2 + 4 * i, pair + 512 * u + 64 * i + 4 * col, 4});
  f(Piece{0, pair + 512 * n + 32 * u + 2 * col, 2});
}

// Calls f(piece) for every piece of column `col`'s block b, with the piece's GGUF offset
// relative to the row and its packed offset relative to the group.
template <class F>
void each_piece(specd_dtype dtype, int64_t row_bytes, int64_t col, F f) {
  const int64_t block = dtype == SPECD_DTYPE_Q4_K ? 144 : dtype == SPECD_DTYPE_Q6_K ? 210 : 34;
  const int64_t nb = row_bytes / block;
  for (int64_t b = 0; b < nb; ++b) {
    auto shifted = [&](Piece p) { f(Piece{block * b + p.gguf, p.packed, p.bytes}); };
    if (dtype == SPECD_DTYPE_Q4_K)
      q4k_pieces(col, b, nb, shifted);
    else if (dtype == SPECD_DTYPE_Q6_K)
      q6k_pieces(col, b, nb, shifted);
    else
      q8_0_pieces(col, b, nb, shifted);
  }
}

}  // namespace

void pack(specd_dtype dtype, const uint8_t* src, int64_t rows, int64_t row_bytes, uint8_t* dst) {
  const int64_t gb = group_bytes(row_bytes);
  for (int64_t g = 0; g * kGroup < rows; ++g) {
    uint8_t* group = dst + g * gb;
    std::memset(group + kGroup * row_bytes, 0, static_cast<size_t>(gb - kGroup * row_bytes));
    for (int64_t col = 0; col < kGroup; ++col) {
      const int64_t row = g * kGroup + col < rows ? g * kGroup + col : rows - 1;
      const uint8_t* r = src + row * row_bytes;
      each_piece(dtype, row_bytes, col, [&](Piece p) {
        std::memcpy(group + p.packed, r + p.gguf, static_cast<size_t>(p.bytes));
      });
    }
  }
}

void unpack_rows(specd_dtype dtype, const uint8_t* packed, int64_t row_bytes, int64_t first,
                 int64_t count, uint8_t* dst) {
  const int64_t gb = group_bytes(row_bytes);
  for (int64_t r = 0; r < count; ++r) {
    const int64_t row = first + r;
    const uint8_t* group = packed + row / kGroup * gb;
    uint8_t* to = dst + r * row_bytes;
    each_piece(dtype, row_bytes, row % kGroup, [&](Piece p) {
      std::memcpy(to + p.gguf, group + p.packed, static_cast<size_t>(p.bytes));
    });
  }
}

}  // namespace specd::cpu::packed_weights
