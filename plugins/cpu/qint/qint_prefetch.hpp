// Weight rows asked for ahead of the integer kernels that read them a column at a time. Row
// j + kAhead's blocks are asked for block by block while row j's are worked on: spread so, the
// requests keep the memory busier than a whole row asked for at once (on a Zen 3 VM, AVX2, one
// row's q6_K matmuls of the 1.5 B constructed model took 0.7x as long, its q4_K and the 95 M
// model's q8_0 ones 0.96x). Internal linkage, as qint_reduce.hpp.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "qint/qint.hpp"

namespace specd::cpu::qint {
namespace {

constexpr int kAhead = 4;

// Weight row j + kAhead, or null when it is past j1 (another task's).
inline const uint8_t* row_ahead(const QArgs& a, int64_t j, int64_t j1) {
  return j + kAhead < j1 ? a.w + (j + kAhead) * a.ldw : nullptr;
}

// Asks for the cache lines of bytes [p, p + n), and with `beyond` (bytes; 0: none) those of
// [p + beyond, p + beyond + n) into L2: the same span kAhead rows further on (beyond_rows),
// which keeps more of the stream in flight. On a Xeon 6 VM (AVX2 kernel, 2 threads) one row of
// a 1.5 B Q8_0 took 0.79x as long, of the 95 M Q8_0 in L3 0.67x, of a 1.5 B Q4_K_M 0.96x. That
// span may lie past the weights: a prefetch never faults.
inline void prefetch_span(const uint8_t* p, int64_t n, int64_t beyond = 0) {
  const char* c = reinterpret_cast<const char*>(p);
  for (int64_t o = 0; o < n; o += 64) {
    _mm_prefetch(c + o, _MM_HINT_T0);
    if (beyond) _mm_prefetch(c + beyond + o, _MM_HINT_T1);
  }
  _mm_prefetch(c + n - 1, _MM_HINT_T0);
}

// prefetch_span's `beyond` for the kernels that decode one row (m = 1).
inline int64_t beyond_rows(const QArgs& a) {
  return a.m == 1 ? kAhead * a.ldw : 0;
}

// Column j's weight row prepared block by block into P (nb blocks of Bytes) with
// prep(block, Prep*), the same blocks of the row ahead asked for meanwhile.
template <int64_t Bytes, class Prep, class PrepBlock>
inline void prepare_row(const QArgs& a, int64_t j, int64_t j1, int64_t nb, Prep* P,
                        PrepBlock prep) {
  const uint8_t* w = a.w + j * a.ldw;
  const uint8_t* ahead = row_ahead(a, j, j1);
  for (int64_t b = 0; b < nb; ++b) {
    if (ahead) prefetch_span(ahead + Bytes * b, Bytes);
    prep(w + Bytes * b, P + b);
  }
}

}  // namespace
}  // namespace specd::cpu::qint
