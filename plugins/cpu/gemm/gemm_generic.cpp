// Portable small-m GEMM kernel: element (i, j) = sum over k in 16 interleaved lanes, lanes
// added pairwise in a fixed order. Weight rows are decoded to f32 (exactly) once per column
// and applied to all m rows.
#include <vector>

#include "gemm/decode.hpp"
#include "gemm/gemm_kernels.hpp"

namespace specd::cpu {
namespace {

float dot(const float* x, const float* w, int64_t k) {
  float lane[16] = {};
  int64_t kk = 0;
  for (; kk + 16 <= k; kk += 16)
    for (int l = 0; l < 16; ++l) lane[l] += x[kk + l] * w[kk + l];
  for (int l = 0; kk + l < k; ++l) lane[l] += x[kk + l] * w[kk + l];
  for (int width = 8; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lane[l] += lane[l + width];
  return lane[0];
}

}  // namespace

void gemm_cols_generic(const GemmArgs& a, int64_t j0, int64_t j1) {
  thread_local std::vector<float> wrow;
  wrow.resize(static_cast<size_t>(a.k));
  for (int64_t j = j0; j < j1; ++j) {
    decode_row(a.w + j * a.ldw, a.dtype, a.k, wrow.data());
    for (int64_t i = 0; i < a.m; ++i) a.y[i * a.ldy + j] = dot(a.x + i * a.ldx, wrow.data(), a.k);
  }
}

}  // namespace specd::cpu
