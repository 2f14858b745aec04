// The integer family's portable kernel for q2_K, q3_K and iq4_xs: qint.hpp's definitions
// written out element by element over ggml_blocks.hpp's accessors (the SIMD kernels compute
// the same bits).
#include <cmath>

#include "qint/qint_lowbit.hpp"
#include "qint/qint_reduce.hpp"
#include "specd/cpp/ggml_blocks.hpp"

namespace specd::cpu::qint {
namespace {

float dot_q2_k(const uint8_t* w, const int8_t* y, const float* dy, const int16_t* bs, int64_t nb) {
  float acc[16] = {}, macc[8] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + 84 * b;
    const int8_t* yb = y + 256 * b;
    const int16_t* bb = bs + 16 * b;
    int32_t isum[16] = {};
    for (unsigned e = 0; e < 256; ++e)
      isum[(e & 63) >> 2] +=
          static_cast<int32_t>((blk[e >> 4] & 15u) * ggml::q2_k_quant(blk, e)) * yb[e];
    const float dd = ggml::load_f16(blk + 80) * dy[b], dm = ggml::load_f16(blk + 82) * dy[b];
    for (int l = 0; l < 16; ++l) acc[l] = std::fma(dd, static_cast<float>(isum[l]), acc[l]);
    for (int l = 0; l < 8; ++l) {
      const int32_t ms = (blk[2 * l] >> 4) * bb[2 * l] + (blk[2 * l + 1] >> 4) * bb[2 * l + 1];
      macc[l] = std::fma(dm, static_cast<float>(ms), macc[l]);
    }
  }
  return reduce(acc, 16) - reduce(macc, 8);
}

// q3_K and iq4_xs: signed scale times signed integer, no min terms.
template <uint32_t T>
float dot_signed(const uint8_t* w, const int8_t* y, const float* dy, int64_t nb) {
  constexpr int64_t bytes = ggml::block_layout(T).bytes;
  float acc[16] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + bytes * b;
    const int8_t* yb = y + 256 * b;
    int32_t isum[16] = {};
    for (unsigned e = 0; e < 256; ++e) {
      int coef;
      if constexpr (T == ggml::kQ3_K) {
        coef = ggml::q3_k_scale(blk + 96, e >> 4) * ggml::q3_k_quant(blk, e);
      } else {
        static_assert(T == ggml::kIQ4_XS);
        coef = ggml::iq4_xs_scale(blk, e >> 5) * ggml::iq4_level(ggml::iq4_xs_quant(blk, e));
      }
      isum[(e & 63) >> 2] += coef * yb[e];
    }
    const float dd = ggml::load_f16(blk + (T == ggml::kQ3_K ? 108 : 0)) * dy[b];
    for (int l = 0; l < 16; ++l) acc[l] = std::fma(dd, static_cast<float>(isum[l]), acc[l]);
  }
  return reduce(acc, 16);
}

}  // namespace

float dot_lowbit(specd_dtype dt, const uint8_t* w, const int8_t* y, const float* dy,
                 const int16_t* bs, int64_t nb) {
  switch (dt) {
    case SPECD_DTYPE_Q2_K:
      return dot_q2_k(w, y, dy, bs, nb);
    case SPECD_DTYPE_Q3_K:
      return dot_signed<ggml::kQ3_K>(w, y, dy, nb);
    case SPECD_DTYPE_IQ4_XS:
      return dot_signed<ggml::kIQ4_XS>(w, y, dy, nb);
    default:
      unreachable_dtype(dt, "dot_lowbit");
  }
}

}  // namespace specd::cpu::qint
