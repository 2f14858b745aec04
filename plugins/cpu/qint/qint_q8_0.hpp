// The integer family's column-interleaved q8_0 kernel (qint_q8_0_avx512.cpp): qint.hpp's q8_0
// definition, 16 output columns per register.
#pragma once

#include "qint/qint.hpp"

namespace specd::cpu::qint {

// Bytes of scratch cols_q8_0_avx512 needs for m rows of k values (the driver allocates the larger
// of this and scratch_bytes).
int64_t q8_0_scratch_bytes(int64_t m, int64_t k);

// y[:, j0:j1] for all m rows of q8_0 weights (AVX-512 + VNNI; call only after that CPU check).
// `scratch`: the larger of scratch_bytes(m, k) and the bytes above, 64-byte aligned.
void cols_q8_0_avx512(const QArgs& a, int64_t j0, int64_t j1, uint8_t* scratch);

}  // namespace specd::cpu::qint
