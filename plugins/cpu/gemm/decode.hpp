// Weight rows of any supported dtype to f32, through the SDK's ggml_blocks.hpp (the one
// decoding source shared with specd's GGUF tooling and the GPU kernels). Exact: the bits
// equal llama.cpp's dequantization.
#pragma once

#include <stdint.h>

#include "specd/backend.h"
#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu {

// The weight dtypes matmul and get_rows accept.
#define SPECD_CPU_WEIGHT_DTYPES                                                                 \
  SPECD_DTYPE_F32, SPECD_DTYPE_F16, SPECD_DTYPE_BF16, SPECD_DTYPE_Q8_0, SPECD_DTYPE_Q4_0,       \
      SPECD_DTYPE_Q4_1, SPECD_DTYPE_Q5_0, SPECD_DTYPE_Q5_1, SPECD_DTYPE_Q2_K, SPECD_DTYPE_Q3_K, \
      SPECD_DTYPE_Q4_K, SPECD_DTYPE_Q5_K, SPECD_DTYPE_Q6_K, SPECD_DTYPE_IQ4_NL,                 \
      SPECD_DTYPE_IQ4_XS, SPECD_DTYPE_MXFP4

// Row of k values of `dtype` (validated: a weight dtype, whole blocks) to f32.
static inline void decode_row(const uint8_t* row, specd_dtype dtype, int64_t k, float* out) {
  ggml::dequantize_row(dtype, row, k, out);
}

}  // namespace specd::cpu
