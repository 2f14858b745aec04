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
                 Want{12, 256, 144}, Want{14, 256, 210}}) {
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
