// Row tiles of the integer family's kernels: a kernel templated on its tile's row count MR is
// called once per tile of up to N rows of x. Internal linkage, as qint_reduce.hpp: each kernel
// file is compiled with its own ISA flags.
#pragma once

#include <algorithm>
#include <cstdint>

namespace specd::cpu::qint {
namespace {

// f.template operator()<MR>(i0) for i0 = 0, N, 2N, .. < m with MR = min(N, m - i0) (N <= 8).
// A switch: a chain of compile-time recursive ifs made forwards of eight rows 1.08x as long.
template <int N, class F>
void for_row_tiles(int64_t m, F f) {
  static_assert(N >= 1 && N <= 8, "tiles of 1 to 8 rows");
  for (int64_t i0 = 0; i0 < m; i0 += N) {
    switch (m - i0 < N ? m - i0 : N) {
      case 1:
        f.template operator()<1>(i0);
        break;
      case 2:
        if constexpr (N >= 2) f.template operator()<2>(i0);
        break;
      case 3:
        if constexpr (N >= 3) f.template operator()<3>(i0);
        break;
      case 4:
        if constexpr (N >= 4) f.template operator()<4>(i0);
        break;
      case 5:
        if constexpr (N >= 5) f.template operator()<5>(i0);
        break;
      case 6:
        if constexpr (N >= 6) f.template operator()<6>(i0);
        break;
      case 7:
        if constexpr (N >= 7) f.template operator()<7>(i0);
        break;
      case 8:
        if constexpr (N >= 8) f.template operator()<8>(i0);
        break;
    }
  }
}

// Columns j0 .. j1 - 1 of a kernel that prepares its weight rows (per_col Preps a column), in
// blocks: prepare(j, P + per_col * (j - jb)) for each column of the block, then each tile of up
// to N rows of x meets every prepared column, rows.template operator()<MR>(P + .., i0, j),
// before the next tile. `room`: the scratch's bytes at P. A block holds as many columns as fill
// about half of L1 (at most 16), so that they and a tile of x stay there while every pair meets:
// one column at a time, a prefill read all of x from L2 for each column, and 64 rows of q4_K
// (k 1024, n 4096, one thread of an AVX2 run on a Xeon 6 VM, interleaved) took 1.02-1.07x as
// long, of q6_K 1.14-1.20x.
// Each output is still one call of rows over all its blocks: the bits do not change.
template <int N, class Prep, class Prepare, class Rows>
void column_blocks(int64_t m, int64_t j0, int64_t j1, Prep* P, int64_t per_col, int64_t room,
                   Prepare prepare, Rows rows) {
  const int64_t col_bytes = per_col * static_cast<int64_t>(sizeof(Prep));
  const int64_t cols = std::clamp<int64_t>(std::min<int64_t>(24 * 1024, room) / col_bytes, 1, 16);
  for (int64_t jb = j0; jb < j1; jb += cols) {
    const int64_t je = std::min(j1, jb + cols);
    for (int64_t j = jb; j < je; ++j) prepare(j, P + per_col * (j - jb));
    for_row_tiles<N>(m, [&]<int MR>(int64_t i0) {
      for (int64_t j = jb; j < je; ++j) rows.template operator()<MR>(P + per_col * (j - jb), i0, j);
    });
  }
}

}  // namespace
}  // namespace specd::cpu::qint
