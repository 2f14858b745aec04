// Building blocks of the column-interleaved AVX-512 kernels (qint_q4k_avx512.cpp,
// qint_q6k_avx512.cpp, qint_q8_0_avx512.cpp; qint_avx512.cpp uses the row tiles and zeroing idiom
// too): 16 output columns per register, the weight blocks of a group of 16 columns transposed in
// registers to 8 columns per register (a qword of each), two such halves joined by vpackssdw +
// vpdpwssd. Internal linkage: included by AVX-512 translation units only.
#pragma once

#include <immintrin.h>

#include "qint/packed_weights.hpp"
#include "qint/qint.hpp"
#include "qint/qint_tiles.hpp"

namespace specd::cpu::qint {
namespace {

constexpr int kGroup = 16;    // output columns per group
constexpr int kTileRows = 8;  // rows of x per register tile

// Column of lane c (0..7) of half h: vpackssdw of halves 0 and 1 followed by vpdpwssd puts
// half 0's lanes 2c, 2c + 1 and half 1's into one dword whose index is then this column.
constexpr int column_of(int h, int c) {
  return 4 * (c >> 1) + 2 * h + (c & 1);
}

// An 8 x 8 transpose of qwords: t[i] qword c = z[c] qword i.
[[gnu::always_inline]] inline void transpose8(const __m512i* z, __m512i* t) {
  __m512i x[2][4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    x[0][i] = _mm512_unpacklo_epi64(z[2 * i], z[2 * i + 1]);
    x[1][i] = _mm512_unpackhi_epi64(z[2 * i], z[2 * i + 1]);
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {  // t[2l + h]: 128-bit lane l of x[h][0..3]
    const __m512i a0 = _mm512_shuffle_i64x2(x[h][0], x[h][1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i a1 = _mm512_shuffle_i64x2(x[h][2], x[h][3], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i b0 = _mm512_shuffle_i64x2(x[h][0], x[h][1], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i b1 = _mm512_shuffle_i64x2(x[h][2], x[h][3], _MM_SHUFFLE(3, 2, 3, 2));
    t[0 + h] = _mm512_shuffle_i64x2(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
    t[2 + h] = _mm512_shuffle_i64x2(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
    t[4 + h] = _mm512_shuffle_i64x2(b0, b1, _MM_SHUFFLE(2, 0, 2, 0));
    t[6 + h] = _mm512_shuffle_i64x2(b0, b1, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// Four 16-byte fields of 16 columns transposed: f[i] dword c = dword i of the 16 bytes at
// col[c] + offset.
[[gnu::always_inline]] inline void transpose_fields(const uint8_t* const* col, int64_t offset,
                                                    __m512i* f) {
  __m512i q[4];  // q[i] 128-bit lane l: the bytes of column 4l + i
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    __m512i v =
        _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(col[i] + offset)));
    v = _mm512_inserti32x4(
        v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(col[4 + i] + offset)), 1);
    v = _mm512_inserti32x4(
        v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(col[8 + i] + offset)), 2);
    v = _mm512_inserti32x4(
        v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(col[12 + i] + offset)), 3);
    q[i] = v;
  }
  const __m512i t0 = _mm512_unpacklo_epi32(q[0], q[1]), t1 = _mm512_unpackhi_epi32(q[0], q[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(q[2], q[3]), t3 = _mm512_unpackhi_epi32(q[2], q[3]);
  f[0] = _mm512_unpacklo_epi64(t0, t2);
  f[1] = _mm512_unpackhi_epi64(t0, t2);
  f[2] = _mm512_unpacklo_epi64(t1, t3);
  f[3] = _mm512_unpackhi_epi64(t1, t3);
}

// vpshufb index: in each dword u of a 128-bit lane, the bytes (A, B, C, D) with a value
// v >= 0 meaning byte 4u + v of the source and -1 a zero. A constant table, loaded.
struct alignas(64) ByteIndex {
  int8_t v[64];
};
constexpr ByteIndex make_dword_bytes(int a, int b, int c, int d) {
  ByteIndex t{};
  const int at[4] = {a, b, c, d};
  for (int i = 0; i < 64; ++i) {
    const int u = (i >> 2) & 3, v = at[i & 3];
    t.v[i] = static_cast<int8_t>(v < 0 ? -1 : 4 * u + v);
  }
  return t;
}
template <int A, int B, int C, int D>
[[gnu::always_inline]] inline __m512i dword_bytes() {
  static constexpr ByteIndex table = make_dword_bytes(A, B, C, D);
  return _mm512_load_si512(table.v);
}

// A zeroed register of its own (a zeroing idiom, no execution port) for each accumulating
// instruction, instead of copies of one shared zero.
[[gnu::always_inline]] inline __m512i fresh_zero() {
  __m512i z;
  asm volatile("vpxord %0, %0, %0" : "=v"(z));
  return z;
}

// acc + the dword sums of a's unsigned bytes times b's signed bytes (vpdpbusd), and of a's int16
// pairs times b's (vpdpwssd): the intrinsics' instructions, written so that the accumulator
// is updated in its own register. Through the intrinsics, GCC 12 copied the q4_K kernel's row
// sums to another register before each vpdpwssd and back after it. With these and
// prefetch_share's lines asked for once per step, eight rows of Q4_K_M took 0.95-0.96x as long
// and one row 0.99x; either change alone gained nothing (the accumulators alone 1.00x in
// specd-matmul-bench at m = 8, the prefetches alone 1.03x for eight rows of Q4_K_M).
[[gnu::always_inline]] inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}
// dpbusd with b the 4 bytes at p broadcast to every dword (an embedded broadcast: a load, no
// shuffle).
[[gnu::always_inline]] inline __m512i dpbusd_bcast(__m512i acc, __m512i a, const void* p) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(a), "m"(*static_cast<const int32_t*>(p)));
  return acc;
}
[[gnu::always_inline]] inline __m512i dpwssd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

// 8 activation bytes broadcast to every qword; 2 int16 broadcast to every dword.
[[gnu::always_inline]] inline __m512i bcast8(const int8_t* p) {
  int64_t v;
  __builtin_memcpy(&v, p, 8);
  return _mm512_set1_epi64(v);
}
[[gnu::always_inline]] inline __m512i bcast4(const int16_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The start of the group at column g (a multiple of 16) in packed weights.
inline const uint8_t* packed_group(const QArgs& a, int64_t g) {
  return a.w + g / kGroup * packed_weights::group_bytes(a.ldw);
}

// The 16 weight rows of the group at column g (a short group repeats its last column); for
// packed weights col[0] is the group's start and the others are not set.
inline void group_columns(const QArgs& a, int64_t g, int64_t j1, const uint8_t** col) {
  if (a.packed) {
    col[0] = packed_group(a, g);
    return;
  }
  const int64_t valid = j1 - g < kGroup ? j1 - g : kGroup;
  for (int c = 0; c < kGroup; ++c) col[c] = a.w + (g + (c < valid ? c : valid - 1)) * a.ldw;
}

// What to prefetch while block b of the group at column g runs: a block's share (16 blocks of
// `bytes`) of the weights ahead, or null past the task's columns [.., j1). Unpacked, the
// group's 16 rows are adjacent, as are the next group's: the share of block b of the next
// group. Packed weights are one stream in the order the kernel reads them: the share
// kPackedAhead blocks on (each_group asks for a task's first ones at its start). Against one
// group ahead, forwards of one and of eight rows of Q4_K_M took 0.95x as long, and the
// task's first shares asked for at its start 0.95-0.96x and 0.97x more; 1 or 3 blocks on
// were slower than 2.
constexpr int64_t kPackedAhead = 2;
inline const char* share_ahead(const QArgs& a, int64_t g, int64_t j1, int64_t b, int64_t bytes,
                               int64_t packed_ahead = kPackedAhead) {
  const int64_t share = kGroup * bytes;
  if (a.packed) {
    const uint8_t* at = packed_group(a, g) + share * (b + packed_ahead);
    return at < packed_group(a, (j1 + kGroup - 1) / kGroup * kGroup)
               ? reinterpret_cast<const char*>(at)
               : nullptr;
  }
  if (g + kGroup >= j1) return nullptr;
  return reinterpret_cast<const char*>(a.w + (g + kGroup) * a.ldw) + b * share;
}

// A block's share of the weights ahead (Lines lines from `ahead`) prefetched spread over the
// steps of the block's apply loop: ceil(Lines / Steps) lines in step j (< Steps), before the
// step's rows. A burst of all lines at the block's start held up the block's own work:
// forwards of one and of eight rows of Q4_K_M took about 8% and 10% longer. (They were spread
// over the step's rows too, a branch per row: see dpbusd for what asking once per step gave.)
// With Beyond, the share after it is asked for into L2 as well, which keeps more of the
// DRAM-bound stream in flight than a longer distance into L1 did (that gained nothing): on a
// Xeon 6 VM (2 threads) one row of a 1.5 B Q4_K_M took 0.82x as long (76-82% of the read roof
// instead of 59-64%), with a 152k vocabulary 0.81x, of a 1.5 B Q8_0 0.91x; 8 rows, prefill and
// an L3-resident 95 M the same. The share after may lie past the weights: a prefetch never
// faults.
template <int Lines, int Steps, bool Beyond = false>
[[gnu::always_inline]] inline void prefetch_share(const char* ahead, int j) {
  constexpr int per_step = (Lines + Steps - 1) / Steps;
  for (int l = per_step * j; l < per_step * (j + 1) && l < Lines; ++l) {
    _mm_prefetch(ahead + 64 * l, _MM_HINT_T0);
    if constexpr (Beyond) _mm_prefetch(ahead + 64 * (Lines + l), _MM_HINT_T1);
  }
}

// Stores the 16 columns of each row's accumulator (facc[i]) at y[i, g ..] (a short group
// stores its valid columns).
inline void store_group(const QArgs& a, int64_t g, int64_t j1, const float* facc) {
  const int64_t valid = j1 - g < kGroup ? j1 - g : kGroup;
  const __mmask16 keep = static_cast<__mmask16>((1u << valid) - 1);
  for (int64_t i = 0; i < a.m; ++i)
    _mm512_mask_storeu_ps(a.y + i * a.ldy + g, keep, _mm512_load_ps(facc + 16 * i));
}

// y[:, j0:j1] group by group: facc (16 floats per row of x) zeroed, then for each block b
// block(col, b, ahead) called (it adds the block's terms into facc and prefetches the
// 16 * bytes at `ahead`, share_ahead's, when not null), then facc stored. `bytes` and `values`:
// the weight type's block size and the values in a block.
template <class Block>
void each_group(const QArgs& a, int64_t j0, int64_t j1, int64_t bytes, float* facc, Block block,
                int64_t values = 256, int64_t packed_ahead = kPackedAhead) {
  const int64_t nb = a.k / values;
  if (a.packed) {  // the task's first packed_ahead shares, which no earlier block asked for
    const char* start = reinterpret_cast<const char*>(packed_group(a, j0));
    for (int64_t l = 0; l <= packed_ahead * kGroup * bytes / 64; ++l)
      _mm_prefetch(start + 64 * l, _MM_HINT_T0);
  }
  for (int64_t g = j0; g < j1; g += kGroup) {
    const uint8_t* col[kGroup];
    group_columns(a, g, j1, col);
    for (int64_t i = 0; i < a.m; ++i) _mm512_store_ps(facc + 16 * i, _mm512_setzero_ps());
    for (int64_t b = 0; b < nb; ++b) block(col, b, share_ahead(a, g, j1, b, bytes, packed_ahead));
    store_group(a, g, j1, facc);
  }
}

// Calls f.template operator()<MR>(i0) for the row tiles of up to kTileRows rows.
template <class F>
void for_each_tile(int64_t m, F f) {
  for_row_tiles<kTileRows>(m, f);
}

}  // namespace
}  // namespace specd::cpu::qint
