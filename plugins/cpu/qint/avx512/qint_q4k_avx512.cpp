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
// small scratch and is applied to up to 8 rows of x at a time; weights packed at load
// (packed_weights.hpp) are transposed already, and only their scales go to the scratch.
#include <immintrin.h>

#include "qint/avx512/qint_interleave_avx512.hpp"
#include "qint/qint_q4k.hpp"

namespace specd::cpu::qint {
namespace {

constexpr int64_t kBlockBytes = 144;  // d, dmin (f16), 12 bytes of scales, 128 of quants

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

// The scale and min vectors of a group's block from its 16 headers (bytes 0..15 of each
// column's block) as 4 dword fields (f[i] dword c: header dword i of column c): ggml's 6-bit
// unpacking done on 16 columns at once.
[[gnu::always_inline]] inline void decode_scales(const __m512i* f, Decoded& p) {
  const __m512i dd = f[0];  // d | dmin << 16
  const __m512i a = f[1];   // scale bytes 0..3
  const __m512i bb = f[2];  // 4..7
  const __m512i c = f[3];   // 8..11
  const __m512i low6 = _mm512_set1_epi8(63), low4 = _mm512_set1_epi8(15);
  const __m512i top2 = _mm512_set1_epi8(48);
  const __m512i sc03 = _mm512_and_si512(a, low6);
  const __m512i mn03 = _mm512_and_si512(bb, low6);
  const __m512i sc47 =
      _mm512_or_si512(_mm512_and_si512(c, low4), _mm512_and_si512(_mm512_srli_epi32(a, 2), top2));
  const __m512i mn47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(c, 4), low4),
                                       _mm512_and_si512(_mm512_srli_epi32(bb, 2), top2));
  // Byte j of each dword to both int16 halves; bytes (0, 1) and (2, 3) to the two halves.
  const __m512i pick[4] = {dword_bytes<0, -1, 0, -1>(), dword_bytes<1, -1, 1, -1>(),
                           dword_bytes<2, -1, 2, -1>(), dword_bytes<3, -1, 3, -1>()};
  const __m512i pair01 = dword_bytes<0, -1, 1, -1>(), pair23 = dword_bytes<2, -1, 3, -1>();
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    p.s[j] = _mm512_shuffle_epi8(sc03, pick[j]);
    p.s[4 + j] = _mm512_shuffle_epi8(sc47, pick[j]);
  }
  p.mn[0] = _mm512_shuffle_epi8(mn03, pair01);
  p.mn[1] = _mm512_shuffle_epi8(mn03, pair23);
  p.mn[2] = _mm512_shuffle_epi8(mn47, pair01);
  p.mn[3] = _mm512_shuffle_epi8(mn47, pair23);
  p.d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dd));
  p.dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
}

// The quants of half h, bytes 64 o .. 64 o + 63 of each column (32-byte chunks 2 o, 2 o + 1),
// transposed (t[i] qword c: bytes 64 o + 8 i .. of column column_of(h, c)), split in nibbles.
[[gnu::always_inline]] inline void split_nibbles(const __m512i* t, int h, int o, Decoded& p) {
  const __m512i low4 = _mm512_set1_epi8(15);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // bytes 64o + 8i ..: chunk 2o + i / 4, offset 8 (i % 4)
    const int chunk = 2 * o + i / 4, u = i % 4;
    p.w[2 * chunk][h][u] = _mm512_and_si512(t[i], low4);  // low nibbles: sub-block 2 chunk
    p.w[2 * chunk + 1][h][u] = _mm512_and_si512(_mm512_srli_epi16(t[i], 4), low4);
  }
}

// Block b of a group in GGUF layout: headers and quants transposed in registers.
void decode_group(const uint8_t* const* col, int64_t b, Decoded& p) {
  __m512i f[4];
  transpose_fields(col, kBlockBytes * b, f);
  decode_scales(f, p);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
    for (int o = 0; o < 2; ++o) {
      __m512i z[8], t[8];
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c)
        z[c] = _mm512_loadu_si512(col[column_of(h, c)] + kBlockBytes * b + 16 + 64 * o);
      transpose8(z, t);
      split_nibbles(t, h, o, p);
    }
}

// The scales, mins and d of a group's block in the packed layout (packed_weights.hpp), at `g`.
// Its quants were transposed when the weights were packed: apply_rows reads them from there.
void decode_packed_scales(const uint8_t* g, Decoded& p) {
  __m512i f[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) f[i] = _mm512_load_si512(g + 64 * i);
  decode_scales(f, p);
}

constexpr int kShareLines = kGroup * kBlockBytes / 64;  // 36

// facc[r] (16 columns of row i0 + r) += block b's terms, for MR rows; the first tile also
// prefetches `ahead` (a share of the weights ahead, or null). The quants come from the decoded
// block, or for packed weights (`packed`: the group's block) straight from the weights, split
// into nibbles per sub-block and tile: that was 0.90x as long for one row of Q4_K_M and 0.96x
// for eight as a decoded copy of the block in the scratch.
template <int MR>
[[gnu::always_inline]] inline void apply_rows(const Decoded& p, const QArgs& a, const int16_t* bs32,
                                              int64_t i0, int64_t b, float* facc, const char* ahead,
                                              const uint8_t* packed) {
  const int64_t k = a.k, nb = k / 256;
  __m512i isum[MR];
  for (int r = 0; r < MR; ++r) isum[r] = _mm512_setzero_si512();
#pragma GCC unroll 1
  for (int j = 0; j < 8; ++j) {
    __m512i w[2][4];  // in registers for all MR rows
    if (packed) {     // sub-block j: the low (even j) or high nibbles of chunk j / 2
      // packed_weights.hpp's offset 256 + 512 (2 h + o) + 64 (4 (chunk % 2) + u) with o =
      // chunk / 2, written so that one pointer per step serves all eight loads
      const uint8_t* chunk = packed + 256 + 256 * (j / 2);
      const __m512i low4 = _mm512_set1_epi8(15);
      for (int h = 0; h < 2; ++h)
        for (int u = 0; u < 4; ++u) {
          const __m512i t = _mm512_load_si512(chunk + 1024 * h + 64 * u);
          w[h][u] = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(t, 4) : t, low4);
        }
    } else {
      for (int h = 0; h < 2; ++h)
        for (int u = 0; u < 4; ++u) w[h][u] = p.w[j][h][u];
    }
    if (ahead) prefetch_share<kShareLines, 8, true>(ahead, j);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const int8_t* y = a.x.q + (i0 + r) * k + 256 * b + 32 * j;
      const __m512i y0 = bcast8(y), y1 = bcast8(y + 8), y2 = bcast8(y + 16), y3 = bcast8(y + 24);
      __m512i s[2];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        __m512i v = dpbusd(fresh_zero(), w[h][0], y0);
        v = dpbusd(v, w[h][1], y1);
        v = dpbusd(v, w[h][2], y2);
        s[h] = dpbusd(v, w[h][3], y3);
      }
      isum[r] = dpwssd(isum[r], _mm512_packs_epi32(s[0], s[1]), p.s[j]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const int64_t row = i0 + r;
    const int16_t* bs = bs32 + (row * nb + b) * 8;
    __m512i msum = dpwssd(_mm512_setzero_si512(), p.mn[0], bcast4(bs));
    msum = dpwssd(msum, p.mn[1], bcast4(bs + 2));
    msum = dpwssd(msum, p.mn[2], bcast4(bs + 4));
    msum = dpwssd(msum, p.mn[3], bcast4(bs + 6));
    const __m512 dy = _mm512_set1_ps(a.x.d[row * nb + b]);
    __m512 acc = _mm512_load_ps(facc + 16 * row);
    acc = _mm512_fmadd_ps(_mm512_mul_ps(p.d, dy), _mm512_cvtepi32_ps(isum[r]), acc);
    acc = _mm512_fnmadd_ps(_mm512_mul_ps(p.dmin, dy), _mm512_cvtepi32_ps(msum), acc);
    _mm512_store_ps(facc + 16 * row, acc);
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
  each_group(a, j0, j1, kBlockBytes, facc,
             [&](const uint8_t* const* col, int64_t b, const char* ahead) {
               // Packed: col[0] is the group's start; its quants are read by the apply.
               const uint8_t* packed = a.packed ? col[0] + kGroup * kBlockBytes * b : nullptr;
               if (packed)
                 decode_packed_scales(packed, p);
               else
                 decode_group(col, b, p);
               for_each_tile(m, [&]<int MR>(int64_t i0) {
                 apply_rows<MR>(p, a, bs32, i0, b, facc, i0 == 0 ? ahead : nullptr, packed);
               });
             });
}

}  // namespace specd::cpu::qint
