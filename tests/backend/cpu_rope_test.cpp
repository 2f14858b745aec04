// The CPU backend's rope (plugins/cpu/ops/ops.cpp) rotates by angles computed in double, with cos
// and sin rounded to f32, then rotates each pair in f32: theta = pos * base^(-2j / n_rot), divided
// by freq_factors[j] when given, times freq_scale when not 1; (a, b) becomes
// (a * c - b * s, a * s + b * c). It keeps the cos and sin of recent positions between calls,
// per spec: the bits must be those of the definition whatever the calls before were (other specs,
// positions sharing a slot, frequency factors changed in place). The tests build for the baseline
// x86-64 instruction set, which has no fused multiply-add to contract the products into.
#include <cmath>
#include <cstring>

#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

namespace {

struct Spec {
  uint32_t mode, n_rot;
  float base, freq_scale;
  bool factors;
};

std::vector<float> rope_definition(const std::vector<float>& x, const std::vector<int32_t>& pos,
                                   uint32_t n_head, uint32_t hd, const Spec& c,
                                   const std::vector<float>& factors) {
  std::vector<float> out = x;
  const uint32_t half = c.n_rot / 2;
  for (size_t i = 0; i < pos.size(); ++i)
    for (uint32_t j = 0; j < half; ++j) {
      double th =
          static_cast<double>(pos[i]) * std::pow(static_cast<double>(c.base), -2.0 * j / c.n_rot);
      if (c.factors) th /= static_cast<double>(factors[j]);
      if (c.freq_scale != 1.0f) th *= static_cast<double>(c.freq_scale);
      const float cs = static_cast<float>(std::cos(th)), sn = static_cast<float>(std::sin(th));
      for (uint32_t h = 0; h < n_head; ++h) {
        const size_t e0 = (i * n_head + h) * hd + (c.mode == SPECD_ROPE_NEOX ? j : 2 * j);
        const size_t e1 = e0 + (c.mode == SPECD_ROPE_NEOX ? half : 1);
        out[e0] = x[e0] * cs - x[e1] * sn;
        out[e1] = x[e0] * sn + x[e1] * cs;
      }
    }
  return out;
}

}  // namespace

TEST_CASE("cpu rope: the bits of the definition whatever the calls before") {
  std::mt19937 rng(5);
  const OpenBackend cpu = open_cpu(2);
  Device* const dev = cpu.device.get();
  const uint32_t n_head = 2, hd = 32;
  // More specs than the CPU backend keeps tables for (4), taken in turn: each is dropped and
  // built again. Positions 0 and 256, 255 and -1, 17 and 273 share a slot.
  const std::vector<Spec> specs = {{SPECD_ROPE_NEOX, 32, 10000.0f, 1.0f, false},
                                   {SPECD_ROPE_NORMAL, 32, 10000.0f, 1.0f, false},
                                   {SPECD_ROPE_NEOX, 16, 10000.0f, 1.0f, false},
                                   {SPECD_ROPE_NEOX, 32, 500000.0f, 1.0f, false},
                                   {SPECD_ROPE_NEOX, 32, 10000.0f, 0.25f, false},
                                   {SPECD_ROPE_NEOX, 32, 10000.0f, 1.0f, true},
                                   {SPECD_ROPE_NORMAL, 24, 1000000.0f, 0.5f, true}};
  const std::vector<std::vector<int32_t>> positions = {
      {0, 1, 2, 3}, {256, 255, 17}, {-1, 273, 0}, {5000, 5001, 5002, 5003, 5004, 5005}};
  std::vector<float> factors(16);
  for (size_t j = 0; j < factors.size(); ++j) factors[j] = 1.0f + 0.75f * static_cast<float>(j);
  Buffer bf = upload_vec(*dev, factors);
  int calls = 0, differ_calls = 0;
  for (int round = 0; round < 3; ++round) {
    if (round == 2) {  // the same buffer, new factors
      for (size_t j = 0; j < factors.size(); ++j) factors[j] = 8.0f / static_cast<float>(j + 1);
      bf.upload(factors.data(), factors.size() * sizeof(float));
    }
    for (const Spec& c : specs) {
      // Round 2 takes the specs with factors only: their tables are still there from round 1.
      if (round == 2 && !c.factors) continue;
      for (const auto& pos : positions) {
        const int64_t m = static_cast<int64_t>(pos.size());
        const auto x = random_floats(rng, m * n_head * hd);
        Buffer bx = upload_vec(*dev, x), bp = upload_vec(*dev, pos);
        const View vf = bf.view(SPECD_DTYPE_F32, 1, c.n_rot / 2);
        specd_rope_params p{};
        p.struct_size = sizeof(p);
        p.n_head = n_head;
        p.head_dim = hd;
        p.n_rot = c.n_rot;
        p.base = c.base;
        p.mode = c.mode;
        p.freq_scale = c.freq_scale;
        p.freq_factors = c.factors ? vf.raw() : nullptr;
        dev->rope(bx.view(SPECD_DTYPE_F32, m, n_head * hd), bp.view(SPECD_DTYPE_I32, 1, m), p);
        const auto y = download_vec<float>(bx, x.size());
        const auto want = rope_definition(x, pos, n_head, hd, c, factors);
        ++calls;
        if (std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) != 0) {
          ++differ_calls;
          MESSAGE("round " << round << ", n_rot " << c.n_rot << ", base " << c.base << ", scale "
                           << c.freq_scale << ", factors " << c.factors << ", first position "
                           << pos[0] << ": bits differ");
        }
      }
    }
  }
  CHECK_MESSAGE(differ_calls == 0, differ_calls << " of " << calls << " calls differ");
}
