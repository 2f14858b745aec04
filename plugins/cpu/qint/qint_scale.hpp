// The scale d of a 32-value weight block (ggml::block32_scale) for the AVX2 and AVX-512
// kernels: its f16 converted by F16C, or mxfp4's E8M0 byte. Internal linkage, as
// qint_reduce.hpp: each kernel file has its own ISA flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu::qint {
namespace {

template <uint32_t T>
inline float scale_32(const uint8_t* b) {
  if constexpr (T == ggml::kMXFP4) {
    return ggml::e8m0_half(b[0]);
  } else {
    return _cvtsh_ss(ggml::load_u16(b));
  }
}

}  // namespace
}  // namespace specd::cpu::qint
