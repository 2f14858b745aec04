// Column-range GEMM kernels. Kept free of C++ library headers: gemm_avx512.cpp is compiled
// for AVX-512 and must not emit inline library code that the generic path could pick up.
#pragma once

#include <stdint.h>

#include "specd/backend.h"

namespace specd::cpu {

struct GemmArgs {
  const float* x;    // [m, k], row stride ldx floats
  const uint8_t* w;  // [n, k] of dtype, row stride ldw bytes
  float* y;          // [m, n], row stride ldy floats
  int64_t m, n, k;
  int64_t ldx, ldw, ldy;
  specd_dtype dtype;
  bool packed = false;  // q4_K / q6_K packed (packed_weights.hpp), int8 driver only
};

// Kernel variants; one is chosen per device (the best the CPU runs, or $SPECD_CPU_KERNEL).
// Each is batch invariant on its own; different variants round differently.
enum class GemmKernel { kGeneric, kAvx2, kAvx512 };

bool avx2_available();
bool avx512_available();
const char* kernel_name(GemmKernel kernel);

// y[:, j0:j1] for all m rows; each element's reduction order is fixed (see gemm.hpp).
// `panel` (8 * k floats, or null) holds decoded weights when m > 4 (always for block types
// other than q8_0, for which it must not be null): exact decoding keeps the bits equal to
// the fused path.
void gemm_cols_avx512(const GemmArgs& a, int64_t j0, int64_t j1, float* panel);
void gemm_cols_avx2(const GemmArgs& a, int64_t j0, int64_t j1, float* panel);
void gemm_cols_generic(const GemmArgs& a, int64_t j0, int64_t j1);

}  // namespace specd::cpu
