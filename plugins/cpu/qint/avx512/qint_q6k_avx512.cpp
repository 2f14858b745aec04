// The integer family's q6_K kernel on AVX-512 + VNNI, column-interleaved like the q4_K one
// (qint_interleave_avx512.hpp): 16 output columns per register, qint.hpp's q6_K definition
// (one exact int32 per block and output, one f32 accumulator per output), so the bits equal
// the generic kernel's.
//
// Per group of 16 columns and block, the low nibbles (128 bytes) and the high 2-bit pairs (64
// bytes) of 8 columns at a time are transposed to a qword of each column per register and
// joined into the unsigned 6-bit values (the stored q + 32): register p of a half holds values
// 8p .. 8p + 7 of its 8 columns. A vpdpbusd lane sums 4 products (|sum| <= 4 * 63 * 127 <
// 2^15), vpackssdw joins the halves and vpdpwssd adds each column's two lanes times the scale
// of their 16-value group. The offset is subtracted once per block: 32 * sum over groups g of
// sc[g] * bsum16[g]. Weights packed at load (packed_weights.hpp) arrive transposed already:
// each register is one aligned load and only the 6-bit values are joined per block.
#include <immintrin.h>

#include "qint/avx512/qint_interleave_avx512.hpp"
#include "qint/qint_q6k.hpp"

namespace specd::cpu::qint {
namespace {

constexpr int64_t kBlockBytes = 210;         // 128 low nibbles, 64 high pairs, 16 scales, d (f16)
constexpr int64_t kPackedBlockBytes = 3328;  // a packed group's block without its d

// One decoded block of a group: v[p][h] the unsigned values 8p .. 8p + 7 of the 8 columns of
// half h; s[g] the scale of 16-value group g per column in both int16 halves of its dword;
// off[q] 32 times the scales of groups 2q and 2q + 1 as an int16 pair; d per column.
struct alignas(64) Decoded6 {
  __m512i v[32][2];
  __m512i s[16];
  __m512i off[8];
  __m512 d;
};

// The scales of a group's block from its 16 columns' scale bytes as 4 dword fields (f[i]
// dword c: scales 4i .. 4i + 3 of column c). Each int8 goes into the high byte of an int16,
// then is shifted down with its sign: by 8 for the scale, by 3 for 32 times it.
[[gnu::always_inline]] inline void decode_scales6(const __m512i* f, Decoded6& p) {
  const __m512i pick[4] = {dword_bytes<-1, 0, -1, 0>(), dword_bytes<-1, 1, -1, 1>(),
                           dword_bytes<-1, 2, -1, 2>(), dword_bytes<-1, 3, -1, 3>()};
  const __m512i pair[2] = {dword_bytes<-1, 0, -1, 1>(), dword_bytes<-1, 2, -1, 3>()};
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g)
    p.s[g] = _mm512_srai_epi16(_mm512_shuffle_epi8(f[g / 4], pick[g % 4]), 8);
#pragma GCC unroll 8
  for (int q = 0; q < 8; ++q)
    p.off[q] = _mm512_srai_epi16(_mm512_shuffle_epi8(f[q / 2], pair[q % 2]), 3);
}

// The 16 columns' d of block b in GGUF layout: a gather of their f16 (the dword at 206 ends
// inside the block).
[[gnu::always_inline]] inline __m512 gather_d(const uint8_t* const* col, int64_t b) {
  alignas(64) int32_t at[16];
  for (int c = 0; c < kGroup; ++c) at[c] = static_cast<int32_t>(col[c] - col[0]);
  const __m512i dd =
      _mm512_i32gather_epi32(_mm512_load_si512(at), col[0] + kBlockBytes * b + 206, 1);
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dd, 16)));
}

// The 8 columns' qh bytes 32H .. 32H + 31 as 4 registers: t[i] qword c = qword i of column c.
[[gnu::always_inline]] inline void transpose_qh(const uint8_t* const* col8, int64_t at,
                                                __m512i* t) {
  __m512i pair[4];  // columns 2k (low 256 bits) and 2k + 1
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k)
    pair[k] = _mm512_inserti64x4(
        _mm512_castsi256_si512(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(col8[2 * k] + at))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(col8[2 * k + 1] + at)), 1);
  const __m512i lo = _mm512_setr_epi64(0, 4, 8, 12, 1, 5, 9, 13);
  const __m512i hi = _mm512_setr_epi64(2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i a0 = _mm512_permutex2var_epi64(pair[0], lo, pair[1]);  // cols 0-3 q0, q1
  const __m512i a1 = _mm512_permutex2var_epi64(pair[0], hi, pair[1]);  // q2, q3
  const __m512i b0 = _mm512_permutex2var_epi64(pair[2], lo, pair[3]);  // cols 4-7
  const __m512i b1 = _mm512_permutex2var_epi64(pair[2], hi, pair[3]);
  t[0] = _mm512_shuffle_i64x2(a0, b0, _MM_SHUFFLE(1, 0, 1, 0));
  t[1] = _mm512_shuffle_i64x2(a0, b0, _MM_SHUFFLE(3, 2, 3, 2));
  t[2] = _mm512_shuffle_i64x2(a1, b1, _MM_SHUFFLE(1, 0, 1, 0));
  t[3] = _mm512_shuffle_i64x2(a1, b1, _MM_SHUFFLE(3, 2, 3, 2));
}

// Bits 2s, 2s + 1 of every byte moved to bits 4, 5 (the rest zero).
template <int S>
[[gnu::always_inline]] inline __m512i high_pair(__m512i q) {
  const __m512i m = _mm512_set1_epi8(0x30);
  if constexpr (S == 0) return _mm512_and_si512(_mm512_slli_epi16(q, 4), m);
  if constexpr (S == 1) return _mm512_and_si512(_mm512_slli_epi16(q, 2), m);
  if constexpr (S == 2) return _mm512_and_si512(q, m);
  return _mm512_and_si512(_mm512_srli_epi16(q, 2), m);
}

// The 6-bit values of two registers from low-nibble register t (qwords of low bytes 8i .. of
// a range of 128 values) and its high-pair register q (qwords of high bytes 8 (i % 4) ..):
// value 64n + 8i + e is nibble n of low byte 8i + e and pair 2n + i / 4 of high byte
// 8 (i % 4) + e; lo holds n = 0, hi n = 1.
[[gnu::always_inline]] inline void join6(__m512i t, __m512i q, int i, __m512i& lo, __m512i& hi) {
  const __m512i low4 = _mm512_set1_epi8(15);
  const __m512i p0 = i < 4 ? high_pair<0>(q) : high_pair<1>(q);
  const __m512i p1 = i < 4 ? high_pair<2>(q) : high_pair<3>(q);
  // (x & 15) | y: ternary-logic table 0xEC over (x, y, 15)
  lo = _mm512_ternarylogic_epi32(t, p0, low4, 0xEC);
  hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(t, 4), p1, low4, 0xEC);
}

// Values 128H .. 128H + 127 of half h: t[i] qword c = low-nibble bytes 64H + 8i .. of column
// column_of(h, c), qh[i] qword c = high-pair bytes 128 + 32H + 8i ...
[[gnu::always_inline]] inline void join_values(const __m512i* t, const __m512i* qh, int h, int H,
                                               Decoded6& p) {
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) join6(t[i], qh[i % 4], i, p.v[16 * H + i][h], p.v[16 * H + 8 + i][h]);
}

// Block b of a group in GGUF layout: scales, d and values transposed in registers.
void decode_group6(const uint8_t* const* col, int64_t b, Decoded6& p) {
  __m512i f[4];
  transpose_fields(col, kBlockBytes * b + 192, f);
  decode_scales6(f, p);
  p.d = gather_d(col, b);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const uint8_t* col8[8];
    for (int c = 0; c < 8; ++c) col8[c] = col[column_of(h, c)];
#pragma GCC unroll 2
    for (int H = 0; H < 2; ++H) {  // low nibbles at 64H, high pairs at 128 + 32H
      __m512i z[8], t[8], qh[4];
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) z[c] = _mm512_loadu_si512(col8[c] + kBlockBytes * b + 64 * H);
      transpose8(z, t);
      transpose_qh(col8, kBlockBytes * b + 128 + 32 * H, qh);
      join_values(t, qh, h, H, p);
    }
  }
}

// A block's share of the weights ahead (16 blocks of 210 bytes, not line aligned: 53 lines),
// prefetched over the first row tile.
constexpr int kShareLines = (kGroup * kBlockBytes + 63) / 64 + 1;

// facc[r] (16 columns of row i0 + r) += block b's terms, for MR rows.
// The first tile also prefetches `ahead` (a share of the weights ahead, or null).
template <int MR>
[[gnu::always_inline]] inline void apply_rows6(const Decoded6& p, const QArgs& a, int64_t i0,
                                               int64_t b, float* facc, const char* ahead) {
  const int64_t k = a.k, nb = k / 256;
  // C independent sums per row (exact integers, so their order cannot show): one chain of 32
  // vpdpwssd would make a tile of one or two rows wait on its latency.
  constexpr int C = MR == 1 ? 4 : MR < 4 ? 2 : 1;
  __m512i isum[MR][C];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < C; ++c) isum[r][c] = _mm512_setzero_si512();
#pragma GCC unroll 1
  for (int q0 = 0; q0 < 32; q0 += C) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      const int q = q0 + c;  // values 8q .. 8q + 7, group q / 2
      const __m512i w0 = p.v[q][0], w1 = p.v[q][1];
      if (ahead) prefetch_share<kShareLines, 32, true>(ahead, q);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m512i y = bcast8(a.x.q + (i0 + r) * k + 256 * b + 8 * q);
        const __m512i s0 = dpbusd(fresh_zero(), w0, y);
        const __m512i s1 = dpbusd(fresh_zero(), w1, y);
        isum[r][c] = dpwssd(isum[r][c], _mm512_packs_epi32(s0, s1), p.s[q / 2]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const int64_t row = i0 + r;
    const int16_t* bs = a.x.bsum16 + row * (k / 16) + 16 * b;
    __m512i off = dpwssd(fresh_zero(), p.off[0], bcast4(bs));
#pragma GCC unroll 7
    for (int q = 1; q < 8; ++q) off = dpwssd(off, p.off[q], bcast4(bs + 2 * q));
    const __m512 dd = _mm512_mul_ps(p.d, _mm512_set1_ps(a.x.d[row * nb + b]));
    __m512 acc = _mm512_load_ps(facc + 16 * row);
    __m512i sum = isum[r][0];
    for (int c = 1; c < C; ++c) sum = _mm512_add_epi32(sum, isum[r][c]);
    acc = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(_mm512_sub_epi32(sum, off)), acc);
    _mm512_store_ps(facc + 16 * row, acc);
  }
}

// Rows i0 .. i0 + MR - 1 of x (MR <= 8) over packed weights: each register of values is joined
// and applied at once, with no decoded copy of the block in the scratch (its stores and loads
// cost more than joining the values again for each tile of 8 rows). facc += block b's terms;
// the same integers and f32 steps as apply_rows6, so the same bits. The first tile also
// prefetches `ahead` (a share of the weights ahead, or null).
template <int MR>
[[gnu::always_inline]] inline void apply_packed(const uint8_t* g, int64_t b, int64_t nb,
                                                const QArgs& a, int64_t i0, float* facc,
                                                const char* ahead) {
  const int64_t k = a.k;
  const uint8_t* blk = g + kPackedBlockBytes * b;
  __m512i f[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) f[i] = _mm512_load_si512(blk + 64 * i);
  const __m512i pick[4] = {dword_bytes<-1, 0, -1, 0>(), dword_bytes<-1, 1, -1, 1>(),
                           dword_bytes<-1, 2, -1, 2>(), dword_bytes<-1, 3, -1, 3>()};
  // Independent sums per row (exact integers: their order cannot show), 4 for one row and 2
  // for up to four, so that no chain of vpdpwssd waits on its latency; the high pairs stay in
  // registers for up to two rows.
  constexpr int C = MR == 1 ? 2 : 1;
  constexpr int S = MR <= 4 ? 2 * C : 1;  // sums per row
  __m512i isum[MR][S];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < S; ++c) isum[r][c] = _mm512_setzero_si512();
#pragma GCC unroll 1
  for (int H = 0; H < 2; ++H) {
    __m512i qh[2][4];
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h)
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
        qh[h][i] = _mm512_load_si512(blk + 2304 + 64 * (8 * h + 4 * H + i));
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      if (ahead) prefetch_share<kShareLines, 16, true>(ahead, 8 * H + i);
      __m512i va[2], vb[2];  // values 8qa .. and 8qb .. of half h
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m512i t = _mm512_load_si512(blk + 256 + 64 * (16 * h + 8 * H + i));
        const __m512i q =
            MR <= 2 ? qh[h][i % 4] : _mm512_load_si512(blk + 2304 + 64 * (8 * h + 4 * H + i % 4));
        join6(t, q, i, va[h], vb[h]);
      }
      const int qa = 16 * H + i, qb = 16 * H + 8 + i;
      const __m512i sa = _mm512_srai_epi16(_mm512_shuffle_epi8(f[qa / 8], pick[(qa / 2) % 4]), 8);
      const __m512i sb = _mm512_srai_epi16(_mm512_shuffle_epi8(f[qb / 8], pick[(qb / 2) % 4]), 8);
      const int c = C == 2 ? i % 2 : 0;
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const int8_t* y = a.x.q + (i0 + r) * k + 256 * b;
        const __m512i ya = bcast8(y + 8 * qa), yb = bcast8(y + 8 * qb);
        const __m512i pa =
            _mm512_packs_epi32(dpbusd(fresh_zero(), va[0], ya), dpbusd(fresh_zero(), va[1], ya));
        const __m512i pb =
            _mm512_packs_epi32(dpbusd(fresh_zero(), vb[0], yb), dpbusd(fresh_zero(), vb[1], yb));
        isum[r][c] = dpwssd(isum[r][c], pa, sa);
        isum[r][S == 1 ? 0 : C + c] = dpwssd(isum[r][S == 1 ? 0 : C + c], pb, sb);
      }
    }
  }
  const __m512i pair[2] = {dword_bytes<-1, 0, -1, 1>(), dword_bytes<-1, 2, -1, 3>()};
  const __m512 d = _mm512_cvtph_ps(
      _mm256_load_si256(reinterpret_cast<const __m256i*>(g + kPackedBlockBytes * nb + 32 * b)));
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const int16_t* bs = a.x.bsum16 + (i0 + r) * (k / 16) + 16 * b;
    __m512i off = fresh_zero();
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q)
      off = dpwssd(off, _mm512_srai_epi16(_mm512_shuffle_epi8(f[q / 2], pair[q % 2]), 3),
                   bcast4(bs + 2 * q));
    __m512i sum = isum[r][0];
    for (int c = 1; c < S; ++c) sum = _mm512_add_epi32(sum, isum[r][c]);
    const __m512 dd = _mm512_mul_ps(d, _mm512_set1_ps(a.x.d[(i0 + r) * (k / 256) + b]));
    __m512 acc = _mm512_load_ps(facc + 16 * (i0 + r));
    acc = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(_mm512_sub_epi32(sum, off)), acc);
    _mm512_store_ps(facc + 16 * (i0 + r), acc);
  }
}

}  // namespace

int64_t q6k_scratch_bytes(int64_t m, int64_t k) {
  (void)k;
  return static_cast<int64_t>(sizeof(Decoded6)) + 64 * m + 128;
}

void cols_q6k_avx512(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  Decoded6& p = *reinterpret_cast<Decoded6*>(scratch);
  float* facc = reinterpret_cast<float*>(scratch + sizeof(Decoded6));
  const int64_t nb = a.k / 256;
  each_group(a, j0, j1, kBlockBytes, facc,
             [&](const uint8_t* const* col, int64_t b, const char* ahead) {
               if (a.packed) {  // col[0]: the group's start
                 for_each_tile(a.m, [&]<int MR>(int64_t i0) {
                   apply_packed<MR>(col[0], b, nb, a, i0, facc, i0 == 0 ? ahead : nullptr);
                 });
                 return;
               }
               decode_group6(col, b, p);
               for_each_tile(a.m, [&]<int MR>(int64_t i0) {
                 apply_rows6<MR>(p, a, i0, b, facc, i0 == 0 ? ahead : nullptr);
               });
             });
}

}  // namespace specd::cpu::qint
