// The integer family for q2_K, q3_K and iq4_xs: their kernels (qint_lowbit_generic.cpp,
// qint_lowbit_avx2.cpp, qint_lowbit_avx512.cpp), reached through qint.hpp's cols_* functions.
// Their arithmetic is stated in qint.hpp with the other types'; activations are the 256-value
// (q8_K) blocks with bsum16.
#pragma once

#include "qint/qint.hpp"

namespace specd::cpu::qint {

// Output (i, j) by qint.hpp's definition, element by element: weight row `w` of nb 256-value
// blocks of `dt` (q2_K, q3_K or iq4_xs), row i's activation quants `y`, scales `dy`, bsum16 `bs`.
float dot_lowbit(specd_dtype dt, const uint8_t* w, const int8_t* y, const float* dy,
                 const int16_t* bs, int64_t nb);

// y[:, j0:j1] for all m rows of q2_K, q3_K or iq4_xs weights, the same bits as dot_lowbit.
// `scratch`: scratch_bytes(m, k) bytes, 64-byte aligned.
void cols_lowbit_avx2(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch);
void cols_lowbit_avx512(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch);  // + VNNI

}  // namespace specd::cpu::qint
