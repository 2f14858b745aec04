#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gguf/ggml_types.hpp"
#include "specd/cpp/ggml_blocks.hpp"

using namespace specd;

TEST_CASE("ggml type layouts follow llama.cpp") {
  struct Want {
    uint32_t id;
    uint32_t block, bytes;
  };
  for (Want w : {Want{0, 1, 4}, Want{1, 1, 2}, Want{2, 32, 18}, Want{8, 32, 34}, Want{30, 1, 2},
                 Want{12, 256, 144}, Want{14, 256, 210}, Want{39, 32, 17}}) {
    CAPTURE(w.id);
    auto info = ggml_type_info(w.id);
    REQUIRE(info.has_value());
    CHECK(info->block_size == w.block);
    CHECK(info->type_size == w.bytes);
  }
  CHECK(!ggml_type_info(4).has_value());
  CHECK(!ggml_type_info(31).has_value());
  CHECK(ggml_row_size(GgmlType::kQ8_0, 64) == 68);
  CHECK(std::string(ggml_type_name(GgmlType::kBF16)) == "bf16");
  CHECK(std::string(ggml_type_name(GgmlType::kMXFP4)) == "mxfp4");
}

namespace {

// OCP Microscaling's FP4 (E2M1: sign, 2 exponent bits with bias 1, 1 mantissa bit) times the
// block's E8M0 scale 2^(e - 127), written from the format's definition rather than from the
// decoder's table. As ggml, the value is formed as twice the E2M1 value (an integer) times
// 2^(e - 128), so that e = 255 (NaN in OCP's E8M0) reads as 2^128 without overflowing first.
float ocp_mxfp4(unsigned nibble, unsigned e) {
  const unsigned exponent = (nibble >> 1) & 3u, mantissa = nibble & 1u;
  const float magnitude = exponent == 0 ? 0.5f * static_cast<float>(mantissa)
                                        : (1.0f + 0.5f * static_cast<float>(mantissa)) *
                                              std::ldexp(1.0f, static_cast<int>(exponent) - 1);
  // E2M1's negative zero (code 8) reads as +0, as ggml's level table has it.
  const float doubled = 2.0f * (nibble & 8u && magnitude != 0 ? -magnitude : magnitude);
  return doubled * std::ldexp(1.0f, static_cast<int>(e) - 128);
}

}  // namespace

TEST_CASE("mxfp4 blocks decode as OCP MX FP4 with an E8M0 scale, every code and scale") {
  // Every scale byte, the subnormal scales (0, 1) and the largest (255: level 12 times 2^127
  // is inf in f32, as in ggml) included, and every nibble in both halves of a block.
  std::vector<uint8_t> row(17 * 256);
  for (unsigned e = 0; e < 256; ++e) {
    uint8_t* b = row.data() + 17 * e;
    b[0] = static_cast<uint8_t>(e);
    for (unsigned t = 0; t < 16; ++t) b[1 + t] = static_cast<uint8_t>(t | ((15 - t) << 4));
  }
  std::vector<float> out(32 * 256);
  ggml::dequantize_row(ggml::kMXFP4, row.data(), 32 * 256, out.data());
  for (unsigned e = 0; e < 256; ++e) {
    for (unsigned i = 0; i < 32; ++i) {
      CAPTURE(e);
      CAPTURE(i);
      const unsigned nibble = i < 16 ? i : 15 - (i - 16);
      const float want = ocp_mxfp4(nibble, e);
      const float got = out[32 * e + i];
      const float element = ggml::element<ggml::kMXFP4>(row.data(), 32 * e + i);
      CHECK(std::memcmp(&got, &want, 4) == 0);
      CHECK(std::memcmp(&element, &want, 4) == 0);
    }
  }
}

TEST_CASE("f16 conversion matches IEEE half precision") {
  CHECK(f32_to_f16(0.0f) == 0x0000);
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(-2.0f) == 0xc000);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);  // ties to even rounds up to inf
  CHECK(f32_to_f16(1e9f) == 0x7c00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);  // tie to even
  CHECK(f32_to_f16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie to even, down
  CHECK(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie to even, up
  CHECK(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(f16_to_f32(0x7c00) == std::numeric_limits<float>::infinity());
  // Every finite half survives half -> float -> half.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    if (f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))) != h) {
      FAIL("half " << h << " does not round trip");
    }
  }
}

TEST_CASE("bf16 conversion rounds to nearest even") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  uint32_t bits = 0x3f808000;  // exactly halfway between 0x3f80 and 0x3f81
  float f;
  std::memcpy(&f, &bits, 4);
  CHECK(f32_to_bf16(f) == 0x3f80);
  bits = 0x3f818000;
  std::memcpy(&f, &bits, 4);
  CHECK(f32_to_bf16(f) == 0x3f82);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7f80) == 0x7f80) continue;
    if (f32_to_bf16(bf16_to_f32(static_cast<uint16_t>(h))) != h) {
      FAIL("bf16 " << h << " does not round trip");
    }
  }
}

TEST_CASE("q8_0 quantization uses d = amax / 127 and rounds") {
  std::vector<float> x(64);
  for (int k = 0; k < 64; ++k) x[k] = static_cast<float>(k - 20) * 0.37f;
  x[5] = -12.7f;  // block 0 amax
  std::vector<uint8_t> q(2 * kQ8_0BlockBytes);
  quantize_q8_0(x.data(), q.data(), 64);
  uint16_t dh;
  std::memcpy(&dh, q.data(), 2);
  CHECK(f16_to_f32(dh) == doctest::Approx(0.1f).epsilon(1e-3));
  CHECK(static_cast<int8_t>(q[2 + 5]) == -127);
  std::vector<float> y(64);
  dequantize_q8_0(q.data(), y.data(), 64);
  for (int k = 0; k < 64; ++k) {
    std::memcpy(&dh, q.data() + (k / 32) * kQ8_0BlockBytes, 2);
    CHECK(std::fabs(y[k] - x[k]) <= f16_to_f32(dh) * 0.5f + 1e-3f);
  }
  std::vector<float> zeros(32, 0.0f), out(32, 1.0f);
  quantize_q8_0(zeros.data(), q.data(), 32);
  dequantize_q8_0(q.data(), out.data(), 32);
  for (float v : out) CHECK(v == 0.0f);
}

TEST_CASE("the q8_0 block quantizer rounds half away from zero, as roundf") {
  // Values whose product with 1/d lands just below a half (0.49999997) or on one.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1, 1/d = 1: every other value is its own quant
  x[1] = 0.49999997f;
  x[2] = 0.5f;
  x[3] = -0.5f;
  x[4] = -0.49999997f;
  x[5] = 2.5f;
  x[6] = -1.5f;
  std::vector<uint8_t> block(34);
  specd::ggml::quantize_q8_0_block(x.data(), block.data());
  for (int j = 1; j <= 6; ++j) {
    CAPTURE(j);
    CHECK(static_cast<int8_t>(block[2 + j]) == static_cast<int8_t>(std::lround(x[j])));
  }
}
