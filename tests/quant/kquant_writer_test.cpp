// The tooling's q4_K / q6_K quantizers write blocks that the shared decoder reads back close
// to the input (a layout error would scramble values far beyond the rounding error).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gguf/ggml_types.hpp"
#include "writers/kquant_writer.hpp"

using namespace specd;

namespace {

// RMS(decoded - x) / RMS(x) over n values quantized to `type`.
double relative_rms_error(GgmlType type, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(ggml_row_size(type, n));
  if (type == GgmlType::kQ4_K) quantize_q4_K(x.data(), q.data(), n);
  if (type == GgmlType::kQ6_K) quantize_q6_K(x.data(), q.data(), n);
  std::vector<float> y(x.size());
  dequantize_row(type, q.data(), y.data(), n);
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (y[i] - x[i]) * double(y[i] - x[i]);
    ref += double(x[i]) * x[i];
  }
  return std::sqrt(err / ref);
}

}  // namespace

TEST_CASE("q4_K and q6_K quantizers round-trip through the shared decoder") {
  std::mt19937 rng(5);
  for (float scale : {1.0f, 0.01f, 40.0f}) {
    std::normal_distribution<float> g(0.0f, scale);
    std::vector<float> x(256 * 8);
    for (float& v : x) v = g(rng);
    CAPTURE(scale);
    const double e4 = relative_rms_error(GgmlType::kQ4_K, x);
    const double e6 = relative_rms_error(GgmlType::kQ6_K, x);
    CHECK(e4 < 0.12);
    CHECK(e6 < 0.04);
    CHECK(e6 < e4);
  }
  // All zeros stay zeros.
  std::vector<float> zeros(256, 0.0f);
  std::vector<uint8_t> q(210);
  std::vector<float> y(256, 1.0f);
  quantize_q6_K(zeros.data(), q.data(), 256);
  dequantize_row(GgmlType::kQ6_K, q.data(), y.data(), 256);
  for (float v : y) CHECK(v == 0.0f);
}
