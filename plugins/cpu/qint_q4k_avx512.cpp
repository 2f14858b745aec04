// The integer family's q4_K kernel on AVX-512 + VNNI, column-interleaved: one register holds
// 16 output columns, so no lane ever has to be reduced across, and the per-block f32 work is
// shared by 16 columns. qint.hpp's q4_K definition (one exact int32 per block and output,
// one f32 accumulator per output) holds whatever the layout, so these bits equal the generic
// kernel's.
//
// Per group of 16 weight rows (output columns) and 256-value block, the block's quants are
// transposed in registers: for 8 columns at a time, 8-byte pieces of each column's 128
// quant bytes become the 8 qword lanes of one register (an 8 x 8 qword transpose). Dword lane
// 2c + h of such a register then holds 4 quants of column c; the 4 registers of one 32-value
// sub-block chain their vpdpbusd sums in a lane (16 products, |sum| <= 16 * 15 * 127 < 2^15),
// so one vpackssdw of the two 8-column halves (exact) and one vpdpwssd by the sub-block's
// scale add each column's two lanes, scaled, into its int32. The decoded group lives in a
// small scratch and is applied to up to 8 rows of x at a time.
#include <immintrin.h>

#include "qint.hpp"
#include "qint_q4k.hpp"

namespace specd::cpu::qint {
namespace {

constexpr int64_t kBlockBytes = 144;  // d, dmin (f16), 12 bytes of scales, 128 of quants
constexpr int kGroup = 16;            // output columns per group
constexpr int kTileRows = 8;          // rows of x per register tile

// One decoded block of a group: w[j][h][u] the unsigned quants of sub-block j for the 8
// columns of half h (h = 0: columns 0, 1, 4, 5, 8, 9, 12, 13; h = 1: the others), 4 values
// per dword lane; s[j] the scale of sub-block j per column in both int16 halves of its dword;
// mn[p] the mins of sub-blocks 2p and 2p + 1 per column as an int16 pair; d, dmin per column.
struct alignas(64) Decoded {
  __m512i w[8][2][4];
  __m512i s[8];
  __m512i mn[4];
  __m512 d, dmin;
};

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

// vpshufb index: in each dword u of a 128-bit lane, bytes (4u + lo, -, 4u + hi, -) with the
// gaps zeroed: the two picked bytes widened to an int16 pair.
__m512i pick_pair(int lo, int hi) {
  alignas(64) int8_t idx[64];
  for (int i = 0; i < 64; ++i) {
    const int u = (i >> 2) & 3, at = i & 3;
    idx[i] = static_cast<int8_t>(at == 0 ? 4 * u + lo : at == 2 ? 4 * u + hi : -1);
  }
  return _mm512_load_si512(idx);
}

// The scale and min vectors of a group's block from its 16 headers (bytes 0..15 of each
// column's block): the headers transposed to 4 dword fields per column, then ggml's 6-bit
// unpacking done on 16 columns at once.
[[gnu::always_inline]] inline void decode_scales(const uint8_t* const* col, int64_t b, Decoded& p) {
  __m512i q[4];  // q[i] 128-bit lane l: the header of column 4l + i
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    __m512i v = _mm512_castsi128_si512(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(col[i] + kBlockBytes * b)));
    v = _mm512_inserti32x4(
        v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(col[4 + i] + kBlockBytes * b)), 1);
    v = _mm512_inserti32x4(
        v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(col[8 + i] + kBlockBytes * b)), 2);
    v = _mm512_inserti32x4(
        v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(col[12 + i] + kBlockBytes * b)), 3);
    q[i] = v;
  }
  // Dword f of every column, column c in dword c.
  const __m512i t0 = _mm512_unpacklo_epi32(q[0], q[1]), t1 = _mm512_unpackhi_epi32(q[0], q[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(q[2], q[3]), t3 = _mm512_unpackhi_epi32(q[2], q[3]);
  const __m512i dd = _mm512_unpacklo_epi64(t0, t2);  // d | dmin << 16
  const __m512i a = _mm512_unpackhi_epi64(t0, t2);   // scale bytes 0..3
  const __m512i bb = _mm512_unpacklo_epi64(t1, t3);  // 4..7
  const __m512i c = _mm512_unpackhi_epi64(t1, t3);   // 8..11
  const __m512i low6 = _mm512_set1_epi8(63), low4 = _mm512_set1_epi8(15);
  const __m512i top2 = _mm512_set1_epi8(48);
  const __m512i sc03 = _mm512_and_si512(a, low6);
  const __m512i mn03 = _mm512_and_si512(bb, low6);
  const __m512i sc47 =
      _mm512_or_si512(_mm512_and_si512(c, low4), _mm512_and_si512(_mm512_srli_epi32(a, 2), top2));
  const __m512i mn47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(c, 4), low4),
                                       _mm512_and_si512(_mm512_srli_epi32(bb, 2), top2));
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    p.s[j] = _mm512_shuffle_epi8(sc03, pick_pair(j, j));
    p.s[4 + j] = _mm512_shuffle_epi8(sc47, pick_pair(j, j));
  }
  p.mn[0] = _mm512_shuffle_epi8(mn03, pick_pair(0, 1));
  p.mn[1] = _mm512_shuffle_epi8(mn03, pick_pair(2, 3));
  p.mn[2] = _mm512_shuffle_epi8(mn47, pick_pair(0, 1));
  p.mn[3] = _mm512_shuffle_epi8(mn47, pick_pair(2, 3));
  p.d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
  p.dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
}

// Block b of a group: scales, then the quants of each half transposed and split in nibbles.
void decode_group(const uint8_t* const* col, int64_t b, Decoded& p) {
  decode_scales(col, b, p);
  const __m512i low4 = _mm512_set1_epi8(15);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
    for (int o = 0; o < 2; ++o) {  // quant bytes 64o .. 64o + 63: 32-byte chunks 2o, 2o + 1
      __m512i z[8], t[8];
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c)
        z[c] = _mm512_loadu_si512(col[column_of(h, c)] + kBlockBytes * b + 16 + 64 * o);
      transpose8(z, t);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {  // bytes 64o + 8i ..: chunk 2o + i / 4, offset 8 (i % 4)
        const int chunk = 2 * o + i / 4, u = i % 4;
        p.w[2 * chunk][h][u] = _mm512_and_si512(t[i], low4);  // low nibbles: sub-block 2 chunk
        p.w[2 * chunk + 1][h][u] = _mm512_and_si512(_mm512_srli_epi16(t[i], 4), low4);
      }
    }
}

// A zeroed register of its own (a zeroing idiom, no execution port) for each accumulating
// instruction, instead of copies of one shared zero.
[[gnu::always_inline]] inline __m512i fresh_zero() {
  __m512i z;
  asm volatile("vpxord %0, %0, %0" : "=v"(z));
  return z;
}

// 8 activation bytes broadcast to every qword.
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

// facc[r] (16 columns of row i0 + r) += block b's terms, for MR rows.
template <int MR>
[[gnu::always_inline]] inline void apply_rows(const Decoded& p, const QArgs& a, const int16_t* bs32,
                                              int64_t i0, int64_t b, float* facc) {
  const int64_t k = a.k, nb = k / 256;
  __m512i isum[MR];
  for (int r = 0; r < MR; ++r) isum[r] = _mm512_setzero_si512();
#pragma GCC unroll 1
  for (int j = 0; j < 8; ++j) {
    __m512i w[2][4];  // in registers for all MR rows
    for (int h = 0; h < 2; ++h)
      for (int u = 0; u < 4; ++u) w[h][u] = p.w[j][h][u];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const int8_t* y = a.x.q + (i0 + r) * k + 256 * b + 32 * j;
      const __m512i y0 = bcast8(y), y1 = bcast8(y + 8), y2 = bcast8(y + 16), y3 = bcast8(y + 24);
      __m512i s[2];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m512i v = _mm512_dpbusd_epi32(fresh_zero(), w[h][0], y0);
        v = _mm512_dpbusd_epi32(v, w[h][1], y1);
        v = _mm512_dpbusd_epi32(v, w[h][2], y2);
        s[h] = _mm512_dpbusd_epi32(v, w[h][3], y3);
      }
      isum[r] = _mm512_dpwssd_epi32(isum[r], _mm512_packs_epi32(s[0], s[1]), p.s[j]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const int64_t row = i0 + r;
    const int16_t* bs = bs32 + (row * nb + b) * 8;
    __m512i msum = _mm512_dpwssd_epi32(_mm512_setzero_si512(), p.mn[0], bcast4(bs));
    msum = _mm512_dpwssd_epi32(msum, p.mn[1], bcast4(bs + 2));
    msum = _mm512_dpwssd_epi32(msum, p.mn[2], bcast4(bs + 4));
    msum = _mm512_dpwssd_epi32(msum, p.mn[3], bcast4(bs + 6));
    const __m512 dy = _mm512_set1_ps(a.x.d[row * nb + b]);
    __m512 acc = _mm512_load_ps(facc + 16 * row);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(p.d, dy), _mm512_cvtepi32_ps(isum[r]), acc);
    acc = _mm512_fnmadd_ps(_mm512_mul_ps(p.dmin, dy), _mm512_cvtepi32_ps(msum), acc);
    _mm512_store_ps(facc + 16 * row, acc);
  }
}

void apply_tiles(const Decoded& p, const QArgs& a, const int16_t* bs32, int64_t b, float* facc) {
  for (int64_t i0 = 0; i0 < a.m; i0 += kTileRows) {
    switch (a.m - i0 < kTileRows ? a.m - i0 : kTileRows) {
      case 1:
        apply_rows<1>(p, a, bs32, i0, b, facc);
        break;
      case 2:
        apply_rows<2>(p, a, bs32, i0, b, facc);
        break;
      case 3:
        apply_rows<3>(p, a, bs32, i0, b, facc);
        break;
      case 4:
        apply_rows<4>(p, a, bs32, i0, b, facc);
        break;
      case 5:
        apply_rows<5>(p, a, bs32, i0, b, facc);
        break;
      case 6:
        apply_rows<6>(p, a, bs32, i0, b, facc);
        break;
      case 7:
        apply_rows<7>(p, a, bs32, i0, b, facc);
        break;
      default:
        apply_rows<8>(p, a, bs32, i0, b, facc);
        break;
    }
  }
}

}  // namespace

int64_t q4k_scratch_bytes(int64_t m, int64_t k) {
  return static_cast<int64_t>(sizeof(Decoded)) + 64 * m + 16 * m * (k / 256) + 128;
}

void cols_q4k_avx512(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  const int64_t m = a.m, nb = a.k / 256;
  Decoded& p = *reinterpret_cast<Decoded*>(scratch);
  float* facc = reinterpret_cast<float*>(scratch + sizeof(Decoded));
  int16_t* bs32 = reinterpret_cast<int16_t*>(facc + 16 * m);
  for (int64_t i = 0; i < m; ++i)  // the sums of each sub-block's 32 activation quants
    for (int64_t s = 0; s < 8 * nb; ++s) {
      const int16_t* bs16 = a.x.bsum16 + i * (a.k / 16) + 2 * s;
      bs32[i * 8 * nb + s] = static_cast<int16_t>(bs16[0] + bs16[1]);
    }
  for (int64_t g = j0; g < j1; g += kGroup) {
    const int64_t valid = j1 - g < kGroup ? j1 - g : kGroup;
    const uint8_t* col[kGroup];  // a short group repeats its last column
    for (int c = 0; c < kGroup; ++c) col[c] = a.w + (g + (c < valid ? c : valid - 1)) * a.ldw;
#ifndef PFG
#define PFG 1
#endif
#ifndef PFH
#define PFH _MM_HINT_T0
#endif
    const uint8_t* next = a.w + (g + PFG * kGroup) * a.ldw;
    for (int64_t i = 0; i < m; ++i) _mm512_store_ps(facc + 16 * i, _mm512_setzero_ps());
    for (int64_t b = 0; b < nb; ++b) {
      // The group's 16 rows are adjacent in memory, as are the next group's: one sequential
      // stream, asked for one group ahead, a block's share per block.
      if (g + PFG * kGroup < j1)
        for (int64_t o = 0; o < kGroup * kBlockBytes; o += 64)
          _mm_prefetch(reinterpret_cast<const char*>(next) + b * kGroup * kBlockBytes + o,
                       PFH);
      decode_group(col, b, p);
      apply_tiles(p, a, bs32, b, facc);
    }
    const __mmask16 keep = static_cast<__mmask16>((1u << valid) - 1);
    for (int64_t i = 0; i < m; ++i)
      _mm512_mask_storeu_ps(a.y + i * a.ldy + g, keep, _mm512_load_ps(facc + 16 * i));
  }
}

}  // namespace specd::cpu::qint
