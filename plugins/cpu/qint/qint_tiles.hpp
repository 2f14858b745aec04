// Row tiles of the integer family's kernels: a kernel templated on its tile's row count MR is
// called once per tile of up to N rows of x. Internal linkage, as qint_reduce.hpp: each kernel
// file is compiled with its own ISA flags.
#pragma once

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

}  // namespace
}  // namespace specd::cpu::qint
