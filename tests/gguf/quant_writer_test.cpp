// The quantizers of every writable type against the decoder (ggml_blocks.hpp, itself
// bit-identical to llama.cpp's): what is written decodes back to the input within the
// type's resolution. A field written at the wrong place or shift decodes to garbage, far
// outside these bounds.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "gguf/ggml_types.hpp"
#include "writers/quant_writer.hpp"

using namespace specd;

namespace {

struct Bound {
  GgmlType type;
  double rel_rms;  // the decoded values' RMS error over the inputs' RMS, at most
};

// x written in `type`, then decoded.
std::vector<float> roundtrip(GgmlType type, const std::vector<float>& x) {
  const auto info = ggml_type_info(static_cast<uint32_t>(type));
  REQUIRE(info);
  std::vector<uint8_t> bytes(x.size() / info->block_size * info->type_size);
  quantize_values(type, x.data(), bytes.data(), static_cast<int64_t>(x.size()));
  std::vector<float> y(x.size());
  dequantize_row(type, bytes.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

double rel_rms_error(GgmlType type, const std::vector<float>& x) {
  const std::vector<float> y = roundtrip(type, x);
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    ref += double(x[i]) * x[i];
  }
  return std::sqrt(err / ref);
}

}  // namespace

TEST_CASE("every writable type decodes back to its input within the type's resolution") {
  // Bounds a little above what round-to-nearest gives on Gaussian data (bits per weight:
  // q2_K 2.6, q3_K 3.4, q4 4.5, iq4 4.25-4.5, q5 5.5, q6_K 6.6, q8_0 8.5).
  const Bound bounds[] = {
      {GgmlType::kF32, 0},       {GgmlType::kF16, 1e-3},  {GgmlType::kBF16, 5e-3},
      {GgmlType::kQ8_0, 0.01},   {GgmlType::kQ6_K, 0.03}, {GgmlType::kQ5_0, 0.06},
      {GgmlType::kQ5_1, 0.05},   {GgmlType::kQ5_K, 0.05}, {GgmlType::kQ4_0, 0.12},
      {GgmlType::kQ4_1, 0.1},    {GgmlType::kQ4_K, 0.1},  {GgmlType::kIQ4_NL, 0.12},
      {GgmlType::kIQ4_XS, 0.12}, {GgmlType::kQ3_K, 0.25}, {GgmlType::kQ2_K, 0.5},
      {GgmlType::kMXFP4, 0.15},
  };
  std::mt19937_64 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  // Rows with different scales per block, an outlier, a constant block and a zero block.
  std::vector<float> x(8 * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = g(rng) * (1.0f + float(i / 256));
  x[700] = 40.0f;
  for (size_t i = 1024; i < 1056; ++i) x[i] = 0.5f;
  for (size_t i = 1280; i < 1536; ++i) x[i] = 0.0f;
  for (const Bound& b : bounds) {
    CAPTURE(std::string(ggml_type_name(b.type)));
    CHECK(ggml_writable(b.type));
    const double e = rel_rms_error(b.type, x);
    MESSAGE(std::string(ggml_type_name(b.type)) << ": relative RMS error " << e);
    CHECK(e <= b.rel_rms);
  }
}

TEST_CASE("zeros, and values on a type's grid, come back exactly") {
  const std::vector<float> zeros(256, 0.0f);
  for (GgmlType t :
       {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0,
        GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
        GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kMXFP4}) {
    CAPTURE(std::string(ggml_type_name(t)));
    CHECK(roundtrip(t, zeros) == zeros);
  }
  // q4_0: quarter steps from -8 to 7 quarters (the scale -2 / -8 = 0.25 is a binary16).
  std::vector<float> q4(32), q5(32);
  for (int i = 0; i < 32; ++i) q4[i] = 0.25f * float((i % 16) - 8);
  CHECK(roundtrip(GgmlType::kQ4_0, q4) == q4);
  // q5_0: halves from -16 to 15.
  for (int i = 0; i < 32; ++i) q5[i] = 0.5f * float(i - 16);
  CHECK(roundtrip(GgmlType::kQ5_0, q5) == q5);
  // mxfp4: E2M1's values times 2^-3 (amax 0.75 gives e = 124), both signs.
  const float e2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  std::vector<float> mx(32);
  for (int i = 0; i < 32; ++i) mx[i] = (i % 16 < 8 ? 1.0f : -1.0f) * e2m1[i % 8] / 8.0f;
  CHECK(roundtrip(GgmlType::kMXFP4, mx) == mx);
}

TEST_CASE("types without a writer and partial blocks are refused, naming the type") {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> out(1024);
  CHECK_FALSE(ggml_writable(GgmlType::kQ8_1));
  CHECK_THROWS_WITH_AS(quantize_values(GgmlType::kQ8_1, x.data(), out.data(), 32),
                       doctest::Contains("q8_1"), Error);
  CHECK_THROWS_WITH_AS(quantize_values(GgmlType::kQ4_K, x.data(), out.data(), 128),
                       doctest::Contains("q4_K blocks of 256"), Error);
}
