// Host-side checks of the index and decoding logic the GPU kernels share (numeric.hpp), against
// core's ggml conversions and the CPU backend's mask rules. Runs without a GPU or toolchain.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gguf/ggml_types.hpp"
#include "numeric.hpp"

using namespace specd;

namespace {

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, 4) == 0;
}

}  // namespace

TEST_CASE("f16 and bf16 decode every bit pattern exactly as core does") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = f16_to_f32(static_cast<uint16_t>(h));
    const float got = gpu::f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      CHECK(std::isnan(got));
    } else if (!same_bits(got, want)) {
      INFO("f16 bits " << h);
      CHECK(got == want);
    }
    const float bw = bf16_to_f32(static_cast<uint16_t>(h));
    const float bg = gpu::bf16_to_f32(static_cast<uint16_t>(h));
    CHECK((same_bits(bw, bg) || (std::isnan(bw) && std::isnan(bg))));
  }
}

TEST_CASE("q8_0 elements and load_element address rows like ggml") {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  const int64_t k = 96;  // three blocks
  std::vector<float> x(k), ref(k);
  for (float& v : x) v = dist(rng);
  std::vector<uint8_t> q(k / 32 * 34);
  quantize_q8_0(x.data(), q.data(), k);
  dequantize_q8_0(q.data(), ref.data(), k);
  for (int64_t c = 0; c < k; ++c) {
    CHECK(same_bits(gpu::load_element<gpu::kQ8_0>(q.data(), c), ref[c]));
  }
  std::vector<uint16_t> h(k);
  for (int64_t c = 0; c < k; ++c) h[c] = f32_to_f16(x[c]);
  for (int64_t c = 0; c < k; ++c)
    CHECK(same_bits(gpu::load_element<gpu::kF16>(reinterpret_cast<const uint8_t*>(h.data()), c),
                    f16_to_f32(h[c])));
  CHECK(gpu::load_element<gpu::kF32>(reinterpret_cast<const uint8_t*>(x.data()), 5) == x[5]);
}

TEST_CASE("mask rows: validity rules and key order") {
  const int64_t cap = 16;
  // Tree appended at P = 9: node 3 (parent 1, grandparent 0) has extras 9, 10, 12.
  const std::vector<int32_t> extra = {9, 9, 10, 9, 10, 12};
  gpu::MaskRow node3{9, 3, 6};
  CHECK(gpu::mask_row_ok(node3, 1, extra.data(), 6, cap));
  CHECK(gpu::key_count(node3) == 12);
  std::vector<int64_t> keys;
  for (int64_t j = 0; j < gpu::key_count(node3); ++j)
    keys.push_back(gpu::key_slot(node3, extra.data(), j));
  CHECK(keys == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12});

  // A causal row as a prefix and the same keys as extras give the same sequence.
  const std::vector<int32_t> chain = {5, 6, 7};
  gpu::MaskRow as_prefix{8, 0, 0}, as_extra{5, 0, 3};
  CHECK(gpu::mask_row_ok(as_prefix, 0, nullptr, 0, cap));
  CHECK(gpu::mask_row_ok(as_extra, 0, chain.data(), 3, cap));
  for (int64_t j = 0; j < 8; ++j)
    CHECK(gpu::key_slot(as_prefix, nullptr, j) == gpu::key_slot(as_extra, chain.data(), j));

  // Invalid rows, each of the CPU backend's rules.
  CHECK_FALSE(gpu::mask_row_ok({17, 0, 0}, 0, nullptr, 0, cap));       // prefix > capacity
  CHECK_FALSE(gpu::mask_row_ok({-1, 0, 0}, 0, nullptr, 0, cap));       // negative prefix
  CHECK_FALSE(gpu::mask_row_ok({0, 0, 0}, 0, nullptr, 0, cap));        // no key
  CHECK_FALSE(gpu::mask_row_ok({3, 1, 2}, 0, extra.data(), 6, cap));   // begin[0] != 0
  CHECK_FALSE(gpu::mask_row_ok({3, 2, 1}, 1, extra.data(), 6, cap));   // begin decreasing
  CHECK_FALSE(gpu::mask_row_ok({9, 0, 7}, 0, extra.data(), 6, cap));   // past extra_slots
  CHECK_FALSE(gpu::mask_row_ok({10, 0, 1}, 0, extra.data(), 6, cap));  // extra < prefix
  CHECK_FALSE(gpu::mask_row_ok({9, 0, 2}, 0, extra.data(), 6, cap));   // not increasing
  const std::vector<int32_t> high = {16};
  CHECK_FALSE(gpu::mask_row_ok({0, 0, 1}, 0, high.data(), 1, cap));  // slot >= capacity
  CHECK(gpu::mask_row_ok({0, 0, 1}, 0, high.data(), 1, 17));
}

TEST_CASE("a sliding window starts at the row's last `window` keys of its logical sequence") {
  CHECK(gpu::window_first(12, 0) == 0);     // no window: every key
  CHECK(gpu::window_first(12, 1) == 11);    // the row's own key alone
  CHECK(gpu::window_first(12, 5) == 7);     // keys 7 .. 11
  CHECK(gpu::window_first(12, 12) == 0);    // exactly the sequence
  CHECK(gpu::window_first(12, 1000) == 0);  // longer than the sequence
  CHECK(gpu::window_first(1, 0xFFFFFFFFu) == 0);
  // Node 3 of the tree above (12 keys, extras 9, 10, 12 after 9 prefix rows): a window of 4
  // keeps the last prefix row and the three extras.
  const std::vector<int32_t> extra = {9, 9, 10, 9, 10, 12};
  const gpu::MaskRow node3{9, 3, 6};
  std::vector<int64_t> kept;
  for (int64_t j = gpu::window_first(gpu::key_count(node3), 4); j < gpu::key_count(node3); ++j)
    kept.push_back(gpu::key_slot(node3, extra.data(), j));
  CHECK(kept == std::vector<int64_t>{8, 9, 10, 12});
}
