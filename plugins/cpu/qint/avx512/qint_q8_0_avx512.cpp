// The integer family's q8_0 kernel on AVX-512 + VNNI, column-interleaved: dword lane c of a
// register holds 4 quants of output column c, so one vpdpbusd with 4 activation bytes
// broadcast adds 4 products to each of 16 columns, and the per-block f32 work (one scale
// product, one conversion, one fma) is shared by 16 columns. qint.hpp's q8_0 definition (one
// exact int32 per block and output, one f32 accumulator per output) holds whatever the layout,
// so these bits equal the generic kernel's.
//
// vpdpbusd multiplies unsigned by signed bytes: the weights go in as w + 128 (a flipped top
// bit) and each row's block sum starts at -128 times the sum of its 32 activation quants, so
// the chain ends at sum w y exactly (|sum| <= 32 * 255 * 127 < 2^31). Weights packed at load
// (packed_weights.hpp) are in this layout already; GGUF rows are transposed per block of a
// group of 16 columns into a small scratch and applied to up to 8 rows of x at a time.
#include <immintrin.h>

#include "qint/avx512/qint_interleave_avx512.hpp"
#include "qint/qint_q8_0.hpp"

namespace specd::cpu::qint {
namespace {

constexpr int64_t kBlockBytes = 34;  // d (f16), 32 int8 quants
constexpr int64_t kValues = 32;

// One block of a group: w[i] dword c the quants 4 i .. 4 i + 3 of column c, plus 128; d the
// columns' scales.
struct alignas(64) Decoded {
  __m512i w[8];
  __m512 d;
};

[[gnu::always_inline]] inline __m512i flip(__m512i v) {
  return _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
}

// Block b of a group in GGUF layout: quant bytes 0..15 and 16..31 of the 16 columns transposed
// as two sets of four dword fields; the 16 scales gathered.
void decode_group(const uint8_t* const* col, int64_t b, Decoded& p) {
  __m512i f[4];
  for (int half = 0; half < 2; ++half) {
    transpose_fields(col, kBlockBytes * b + 2 + 16 * half, f);
    for (int i = 0; i < 4; ++i) p.w[4 * half + i] = flip(f[i]);
  }
  alignas(32) uint16_t d[kGroup];
  for (int c = 0; c < kGroup; ++c) __builtin_memcpy(&d[c], col[c] + kBlockBytes * b, 2);
  p.d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d)));
}

// Where block b of a packed group starts (its quants) and where its 16 scales are
// (packed_weights.hpp: blocks in pairs, a last odd block alone).
struct PackedBlock {
  const uint8_t* w;
  const uint8_t* d;
};
inline PackedBlock packed_block(const uint8_t* group, int64_t b, int64_t nb) {
  const uint8_t* pair = group + 2 * kGroup * kBlockBytes * (b / 2);
  const int64_t in_pair = b / 2 * 2 + 1 < nb ? 2 : 1;
  return {pair + 512 * (b % 2), pair + 512 * in_pair + 32 * (b % 2)};
}

constexpr int kShareLines = (kGroup * kBlockBytes + 63) / 64;  // 9

// Packed weights are prefetched this many blocks (544 bytes of a group each) ahead. On a 2-core
// Xeon VM, one row of the 95 M Q8_0 target (L3-resident) decoded 0.92x as fast at 2 blocks and
// the 1.5 B (DRAM-bound) 0.95x at 6, 0.80x at 8; 3 and 4 were best for both.
constexpr int64_t kPackedAheadBlocks = 4;

// facc[r] (16 columns of row i0 + r) += block b's terms, for MR rows; the first tile also
// prefetches `ahead` (a share of the weights ahead, or null). Two chains of vpdpbusd per row
// (the even and odd quads), joined by one add: one chain of 8 was latency-bound for one row.
template <int MR>
[[gnu::always_inline]] inline void apply_rows(const Decoded& p, const PackedBlock* packed,
                                              const QArgs& a, const int32_t* corr, int64_t i0,
                                              int64_t b, float* facc, const char* ahead) {
  const int64_t k = a.k, nb = k / kValues;
  __m512i w[8];
  __m512 dw;
  if (packed) {
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) w[i] = flip(_mm512_load_si512(packed->w + 64 * i));
    dw = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(packed->d)));
  } else {
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) w[i] = p.w[i];
    dw = p.d;
  }
  __m512i isum[2][MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    isum[0][r] = _mm512_set1_epi32(corr[(i0 + r) * nb + b]);
    isum[1][r] = fresh_zero();
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    if (ahead) prefetch_share<kShareLines, 8, true>(ahead, i);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
      isum[i % 2][r] =
          dpbusd_bcast(isum[i % 2][r], w[i], a.x.q + (i0 + r) * k + kValues * b + 4 * i);
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const int64_t row = i0 + r;
    const __m512 dd = _mm512_mul_ps(dw, _mm512_set1_ps(a.x.d[row * nb + b]));
    const __m512i sum = _mm512_add_epi32(isum[0][r], isum[1][r]);
    const __m512 acc = _mm512_load_ps(facc + 16 * row);
    _mm512_store_ps(facc + 16 * row, _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(sum), acc));
  }
}

}  // namespace

int64_t q8_0_scratch_bytes(int64_t m, int64_t k) {
  return static_cast<int64_t>(sizeof(Decoded)) + 64 * m + 4 * m * (k / kValues) + 128;
}

void cols_q8_0_avx512(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch) {
  const int64_t m = a.m, nb = a.k / kValues;
  Decoded& p = *reinterpret_cast<Decoded*>(scratch);
  float* facc = reinterpret_cast<float*>(scratch + sizeof(Decoded));
  int32_t* corr = reinterpret_cast<int32_t*>(facc + 16 * m);
  for (int64_t i = 0; i < m; ++i)  // -128 times each block's sum of activation quants
    for (int64_t b = 0; b < nb; ++b) {
      const int32_t* s4 = a.x.sum4 + i * (a.k / 4) + 8 * b;
      int32_t s = 0;
      for (int l = 0; l < 8; ++l) s += s4[l];
      corr[i * nb + b] = -128 * s;
    }
  each_group(
      a, j0, j1, kBlockBytes, facc,
      [&](const uint8_t* const* col, int64_t b, const char* ahead) {
        // Packed: col[0] is the group's start.
        PackedBlock at{};
        if (a.packed)
          at = packed_block(col[0], b, nb);
        else
          decode_group(col, b, p);
        for_each_tile(m, [&]<int MR>(int64_t i0) {
          apply_rows<MR>(p, a.packed ? &at : nullptr, a, corr, i0, b, facc,
                         i0 == 0 ? ahead : nullptr);
        });
      },
      kValues, kPackedAheadBlocks);
}

}  // namespace specd::cpu::qint
