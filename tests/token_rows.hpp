// Rows of ids for tests that run a model directly: tokens, positions and parents.
#pragma once

#include <cstdint>
#include <vector>

namespace specd::test {

// start, start + 1, ..., start + n - 1: consecutive tokens or positions.
inline std::vector<int32_t> iota_n(int32_t n, int32_t start = 0) {
  std::vector<int32_t> v(n);
  for (int32_t i = 0; i < n; ++i) v[i] = start + i;
  return v;
}

// The parents of a chain of n rows: row i follows row i - 1, row 0 the committed prefix (-1).
inline std::vector<int32_t> chain_parents(int32_t n) {
  return iota_n(n, -1);
}

}  // namespace specd::test
