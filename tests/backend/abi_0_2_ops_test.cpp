// The ops ABI 0.2 added, on every available backend: rope in NEOX mode, with frequency
// factors and linear scaling (partial rotation included), and add with a one-row b (a bias).
// Each against a double reference, each row batch invariant, bad arguments refused.
#include <algorithm>
#include <cstring>

#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

namespace {

struct RopeCase {
  uint32_t mode, n_rot;
  float freq_scale;
  bool factors;
};

// RoPE of backend.h in double: pair j at angle pos * scale * base^(-2j/n_rot) / factor[j],
// elements (2j, 2j+1) in normal mode, (j, j + n_rot/2) in neox mode.
std::vector<double> rope_reference(const std::vector<float>& x, const std::vector<int32_t>& pos,
                                   int64_t n_head, int64_t hd, const RopeCase& c,
                                   const std::vector<float>& factors) {
  std::vector<double> out(x.begin(), x.end());
  const int64_t half = c.n_rot / 2;
  for (size_t i = 0; i < pos.size(); ++i)
    for (int64_t h = 0; h < n_head; ++h)
      for (int64_t j = 0; j < half; ++j) {
        double th = pos[i] * std::pow(10000.0, -2.0 * j / c.n_rot);
        if (c.factors) th /= factors[j];
        th *= c.freq_scale;
        const int64_t base = static_cast<int64_t>(i) * n_head * hd + h * hd;
        const int64_t e0 = base + (c.mode == SPECD_ROPE_NEOX ? j : 2 * j);
        const int64_t e1 = e0 + (c.mode == SPECD_ROPE_NEOX ? half : 1);
        out[e0] = x[e0] * std::cos(th) - x[e1] * std::sin(th);
        out[e1] = x[e0] * std::sin(th) + x[e1] * std::cos(th);
      }
  return out;
}

}  // namespace

TEST_CASE("rope: neox pairs, frequency factors and linear scaling match the reference") {
  std::mt19937 rng(21);
  const std::vector<RopeCase> cases = {
      {SPECD_ROPE_NEOX, 16, 1.0f, false},    {SPECD_ROPE_NEOX, 8, 1.0f, false},
      {SPECD_ROPE_NORMAL, 16, 1.0f, true},   {SPECD_ROPE_NEOX, 16, 1.0f, true},
      {SPECD_ROPE_NORMAL, 16, 0.25f, false}, {SPECD_ROPE_NEOX, 12, 0.5f, true},
  };
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t m = 5, n_head = 3, hd = 16;
    for (const RopeCase& c : cases) {
      CAPTURE(c.mode);
      CAPTURE(c.n_rot);
      CAPTURE(c.freq_scale);
      CAPTURE(c.factors);
      const auto x = random_floats(rng, m * n_head * hd);
      const std::vector<int32_t> pos = {0, 1, 17, 500, 3000};
      std::vector<float> factors(c.n_rot / 2);
      for (size_t j = 0; j < factors.size(); ++j) factors[j] = 1.0f + 0.75f * j;
      Buffer bx = upload_vec(dev, x), bp = upload_vec(dev, pos), bf = upload_vec(dev, factors);
      const View vf = bf.view(SPECD_DTYPE_F32, 1, static_cast<int64_t>(factors.size()));
      specd_rope_params p{};
      p.struct_size = sizeof(p);
      p.n_head = n_head;
      p.head_dim = hd;
      p.n_rot = c.n_rot;
      p.base = 10000.0f;
      p.mode = c.mode;
      p.freq_scale = c.freq_scale;
      p.freq_factors = c.factors ? vf.raw() : nullptr;
      dev.rope(bx.view(SPECD_DTYPE_F32, m, n_head * hd), bp.view(SPECD_DTYPE_I32, 1, m), p);
      const auto y = download_vec<float>(bx, x.size());
      const auto ref = rope_reference(x, pos, n_head, hd, c, factors);
      double worst = 0;
      for (size_t e = 0; e < x.size(); ++e) worst = std::max(worst, std::fabs(y[e] - ref[e]));
      CHECK_MESSAGE(worst <= 1e-5, ob.backend->name() << ": worst error " << worst);

      check_rope_rows_alone(dev, x, pos, n_head * hd, p, y);
    }
  }
}

TEST_CASE("rope: a zeroed 0.2 tail means 0.1's normal rope; bad 0.2 fields are refused") {
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    std::mt19937 rng(22);
    const auto x = random_floats(rng, 2 * 8);
    const std::vector<int32_t> pos = {3, 40};
    Buffer b1 = upload_vec(dev, x), b2 = upload_vec(dev, x), bp = upload_vec(dev, pos);
    specd_rope_params full{};  // 0.2 fields zero
    full.struct_size = sizeof(full);
    full.n_head = 1;
    full.head_dim = 8;
    full.n_rot = 8;
    full.base = 10000.0f;
    specd_rope_params old = full;  // a 0.1 caller's struct
    old.struct_size = offsetof(specd_rope_params, mode);
    dev.rope(b1.view(SPECD_DTYPE_F32, 2, 8), bp.view(SPECD_DTYPE_I32, 1, 2), full);
    dev.rope(b2.view(SPECD_DTYPE_F32, 2, 8), bp.view(SPECD_DTYPE_I32, 1, 2), old);
    CHECK(download_vec<float>(b1, 16) == download_vec<float>(b2, 16));

    specd_rope_params bad = full;
    bad.mode = 1;
    CHECK_THROWS_WITH_AS(
        dev.rope(b1.view(SPECD_DTYPE_F32, 2, 8), bp.view(SPECD_DTYPE_I32, 1, 2), bad),
        doctest::Contains("mode 1"), Error);
    bad = full;
    bad.freq_scale = -1.0f;
    CHECK_THROWS_WITH_AS(
        dev.rope(b1.view(SPECD_DTYPE_F32, 2, 8), bp.view(SPECD_DTYPE_I32, 1, 2), bad),
        doctest::Contains("freq_scale"), Error);
    Buffer bf = dev.alloc(16);
    const View wrong = bf.view(SPECD_DTYPE_F32, 1, 3);  // n_rot / 2 is 4
    bad = full;
    bad.freq_factors = wrong.raw();
    CHECK_THROWS_WITH_AS(
        dev.rope(b1.view(SPECD_DTYPE_F32, 2, 8), bp.view(SPECD_DTYPE_I32, 1, 2), bad),
        doctest::Contains("freq_factors"), Error);
  }
}

TEST_CASE("add: a one-row b is added to every row (a bias), in place too, row by row") {
  std::mt19937 rng(23);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t m = 9, n = 130;
    const auto a = random_floats(rng, m * n, 2.0f);
    const auto b = random_floats(rng, n);
    Buffer ba = upload_vec(dev, a), bb = upload_vec(dev, b), by = dev.alloc(m * n * 4);
    const View va = ba.view(SPECD_DTYPE_F32, m, n), vb = bb.view(SPECD_DTYPE_F32, 1, n);
    dev.add(va, vb, by.view(SPECD_DTYPE_F32, m, n));
    const auto y = download_vec<float>(by, m * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) CHECK(y[i * n + j] == a[i * n + j] + b[j]);
    dev.add(va, vb, va);  // y = a
    CHECK(download_vec<float>(ba, m * n) == y);
    // b must be [m, n] or [1, n].
    Buffer b2 = dev.alloc(2 * n * 4);
    CHECK_THROWS_WITH_AS(dev.add(va, b2.view(SPECD_DTYPE_F32, 2, n), va), doctest::Contains("add"),
                         Error);
  }
}
