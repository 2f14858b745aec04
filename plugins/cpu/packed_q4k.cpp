#include "packed_q4k.hpp"

#include <cstring>

namespace specd::cpu::packed_q4k {
namespace {

constexpr int64_t kHeaderBytes = 16;  // d, dmin, 12 scale bytes
constexpr int64_t kQuantBytes = 128;

// Where column `col` (0..15) of a group sits in the quant part: the kernel's half h and qword
// lane c, inverting column_of(h, c) = 4 (c >> 1) + 2 h + (c & 1) (qint_interleave_avx512.hpp).
struct Lane {
  int64_t h, c;
};
constexpr Lane lane_of(int64_t col) {
  return {(col >> 1) & 1, 2 * (col >> 2) + (col & 1)};
}

// Offset, in a group's block, of header dword `i` and of quant qword `j` (bytes 8 j .. 8 j + 7)
// of column `col`.
constexpr int64_t header_at(int64_t col, int64_t i) {
  return 64 * i + 4 * col;
}
constexpr int64_t quant_at(int64_t col, int64_t j) {
  const Lane l = lane_of(col);
  const int64_t q = 2 * l.h + j / 8;
  return 4 * 64 + 512 * q + 64 * (j % 8) + 8 * l.c;
}

// Calls piece(gguf_offset, group_offset, bytes) for the pieces of one column's block: its
// offset in the GGUF block (144 bytes) and in the packed group block.
template <class Piece>
void each_piece(int64_t col, Piece piece) {
  for (int64_t i = 0; i < kHeaderBytes / 4; ++i) piece(4 * i, header_at(col, i), 4);
  for (int64_t j = 0; j < kQuantBytes / 8; ++j) piece(kHeaderBytes + 8 * j, quant_at(col, j), 8);
}

}  // namespace

void pack(const uint8_t* src, int64_t rows, int64_t row_bytes, uint8_t* dst) {
  const int64_t nb = row_bytes / kBlockBytes;
  for (int64_t g = 0; g * kGroup < rows; ++g) {
    uint8_t* group = dst + g * kGroup * row_bytes;
    for (int64_t col = 0; col < kGroup; ++col) {
      const int64_t row = g * kGroup + col < rows ? g * kGroup + col : rows - 1;
      const uint8_t* r = src + row * row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* from = r + b * kBlockBytes;
        uint8_t* to = group + b * kGroupBlockBytes;
        each_piece(col, [&](int64_t at, int64_t in_group, int64_t n) {
          std::memcpy(to + in_group, from + at, static_cast<size_t>(n));
        });
      }
    }
  }
}

void unpack_rows(const uint8_t* packed, int64_t row_bytes, int64_t first, int64_t count,
                 uint8_t* dst) {
  const int64_t nb = row_bytes / kBlockBytes;
  for (int64_t r = 0; r < count; ++r) {
    const int64_t row = first + r, g = row / kGroup, col = row % kGroup;
    const uint8_t* group = packed + g * kGroup * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* from = group + b * kGroupBlockBytes;
      uint8_t* to = dst + r * row_bytes + b * kBlockBytes;
      each_piece(col, [&](int64_t at, int64_t in_group, int64_t n) {
        std::memcpy(to + at, from + in_group, static_cast<size_t>(n));
      });
    }
  }
}

}  // namespace specd::cpu::packed_q4k
