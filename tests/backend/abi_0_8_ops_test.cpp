// The rope and swiglu parts of ABI 0.8, on every available backend: rope with YaRN (ext_factor,
// attn_factor, beta_fast, beta_slow, n_ctx_orig) in both modes against a double reference of
// backend.h's definition, a 0.2-sized struct giving 0.2's rope, and swiglu_oai (gpt-oss's
// clamped SwiGLU) against its definition with inputs beyond the limit, strided and in place.
// Each row is batch invariant; bad arguments are refused; the host's Device refuses both on a
// backend that predates them, naming it.
#include <algorithm>
#include <cstring>
#include <limits>

#include "backend_test_util.hpp"
#include "models/llama_model.hpp"
#include "writers/llama_writer.hpp"

using namespace specd;
using namespace specd::test;

namespace {

struct YarnCase {
  const char* name;
  uint32_t mode, n_rot;
  float base, freq_scale, ext_factor, attn_factor;
  bool factors;
};

// gpt-oss's rope: base 150000, 32x context extension from 4096 positions.
constexpr float kGptOssBase = 150000.0f;
constexpr uint32_t kNCtxOrig = 4096;
constexpr float kBetaFast = 32.0f, kBetaSlow = 1.0f;

// YaRN's correction dimension in double, written here from backend.h's formula (not the
// SDK's helper, so that a slip there shows).
double corr_dim(uint32_t n_rot, double beta, double base) {
  return n_rot * std::log(kNCtxOrig / (2.0 * M_PI * beta)) / (2.0 * std::log(base));
}

// backend.h's rope with YaRN in double: pair j's unscaled angle theta_e = pos base^(-2j/n_rot)
// / factor[j], interpolated theta_i = freq_scale theta_e, mixed by the ramp when ext_factor
// is not 0; cos and sin times attn_factor, and times 1 + 0.1 ln(1 / freq_scale) with YaRN.
std::vector<double> yarn_reference(const std::vector<float>& x, const std::vector<int32_t>& pos,
                                   int64_t n_head, int64_t hd, const YarnCase& c,
                                   const std::vector<float>& factors) {
  const double lo = std::max(0.0, std::floor(corr_dim(c.n_rot, kBetaFast, c.base)));
  const double hi = std::min(c.n_rot - 1.0, std::ceil(corr_dim(c.n_rot, kBetaSlow, c.base)));
  double mscale = c.attn_factor == 0.0f ? 1.0 : c.attn_factor;
  if (c.ext_factor != 0.0f) mscale *= 1.0 + 0.1 * std::log(1.0 / c.freq_scale);
  std::vector<double> out(x.begin(), x.end());
  const int64_t half = c.n_rot / 2;
  for (size_t i = 0; i < pos.size(); ++i)
    for (int64_t j = 0; j < half; ++j) {
      double theta_e = pos[i] * std::pow(double(c.base), -2.0 * j / c.n_rot);
      if (c.factors) theta_e /= factors[j];
      const double theta_i = theta_e * c.freq_scale;
      const double y = std::clamp((j - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
      const double ramp = c.ext_factor * (1.0 - y);
      const double theta = theta_i * (1.0 - ramp) + theta_e * ramp;
      const double cs = std::cos(theta) * mscale, sn = std::sin(theta) * mscale;
      for (int64_t h = 0; h < n_head; ++h) {
        const int64_t base = static_cast<int64_t>(i) * n_head * hd + h * hd;
        const int64_t e0 = base + (c.mode == SPECD_ROPE_NEOX ? j : 2 * j);
        const int64_t e1 = e0 + (c.mode == SPECD_ROPE_NEOX ? half : 1);
        out[e0] = x[e0] * cs - x[e1] * sn;
        out[e1] = x[e0] * sn + x[e1] * cs;
      }
    }
  return out;
}

specd_rope_params yarn_params(const YarnCase& c, int64_t n_head, int64_t hd, const View* factors) {
  specd_rope_params p{};
  p.struct_size = sizeof(p);
  p.n_head = static_cast<uint32_t>(n_head);
  p.head_dim = static_cast<uint32_t>(hd);
  p.n_rot = c.n_rot;
  p.base = c.base;
  p.mode = c.mode;
  p.freq_scale = c.freq_scale;
  p.freq_factors = c.factors ? factors->raw() : nullptr;
  p.ext_factor = c.ext_factor;
  p.attn_factor = c.attn_factor;
  p.beta_fast = kBetaFast;
  p.beta_slow = kBetaSlow;
  p.n_ctx_orig = kNCtxOrig;
  return p;
}

// gpt-oss's SwiGLU in double: the gate clamped from above, up from both sides.
double swiglu_oai_reference(double g, double u, double alpha, double limit) {
  g = std::min(g, limit);
  u = std::clamp(u, -limit, limit);
  return g / (1.0 + std::exp(-alpha * g)) * (u + 1.0);
}

constexpr float kAlpha = 1.702f, kLimit = 7.0f;  // gpt-oss's

// The message of the UsageError `fn` throws ("" when it throws none; other errors escape).
template <class F>
std::string usage_error_of(F&& fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("rope: YaRN in both modes matches the double reference, row by row") {
  std::mt19937 rng(81);
  const std::vector<YarnCase> cases = {
      {"gpt-oss neox", SPECD_ROPE_NEOX, 64, kGptOssBase, 1.0f / 32, 1.0f, 0.0f, false},
      {"gpt-oss normal, attn_factor", SPECD_ROPE_NORMAL, 64, kGptOssBase, 1.0f / 32, 1.0f, 0.75f,
       false},
      {"normal, factors", SPECD_ROPE_NORMAL, 64, kGptOssBase, 1.0f / 32, 1.0f, 1.0f, true},
      {"neox, partial, ext 0.5", SPECD_ROPE_NEOX, 32, 10000.0f, 0.25f, 0.5f, 1.25f, false},
      {"ext 0: attn_factor alone", SPECD_ROPE_NEOX, 64, kGptOssBase, 1.0f / 32, 0.0f, 1.5f, false},
      {"ext 0, normal, factors", SPECD_ROPE_NORMAL, 48, 10000.0f, 0.5f, 0.0f, 0.8f, true},
  };
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t m = 8, n_head = 2, hd = 64;
    const std::vector<int32_t> pos = {0, 1, 17, 500, 4095, 4096, 7777, 9999};
    for (const YarnCase& c : cases) {
      const std::string name = c.name;
      CAPTURE(name);
      const auto x = random_floats(rng, m * n_head * hd);
      std::vector<float> factors(c.n_rot / 2);
      for (size_t j = 0; j < factors.size(); ++j) factors[j] = 1.0f + 0.25f * j;
      Buffer bx = upload_vec(dev, x), bp = upload_vec(dev, pos), bf = upload_vec(dev, factors);
      const View vf = bf.view(SPECD_DTYPE_F32, 1, static_cast<int64_t>(factors.size()));
      const specd_rope_params p = yarn_params(c, n_head, hd, &vf);
      dev.rope(bx.view(SPECD_DTYPE_F32, m, n_head * hd), bp.view(SPECD_DTYPE_I32, 1, m), p);
      const auto y = download_vec<float>(bx, x.size());
      const auto ref = yarn_reference(x, pos, n_head, hd, c, factors);
      double worst = 0;
      for (size_t e = 0; e < x.size(); ++e) worst = std::max(worst, std::fabs(y[e] - ref[e]));
      CHECK_MESSAGE(worst <= 1e-5, ob.backend->name() << ": worst error " << worst);

      check_rope_rows_alone(dev, x, pos, n_head * hd, p, y);
    }
  }
}

TEST_CASE("rope: a 0.2-sized struct and zeroed YaRN fields give 0.2's rope, bit for bit") {
  std::mt19937 rng(82);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t m = 4, n_head = 2, hd = 32;
    const auto x = random_floats(rng, m * n_head * hd);
    const std::vector<int32_t> pos = {2, 300, 4097, 9000};
    Buffer bp = upload_vec(dev, pos);
    const YarnCase yarn = {"", SPECD_ROPE_NEOX, 32, kGptOssBase, 0.25f, 1.0f, 2.0f, false};
    auto run = [&](const specd_rope_params& p) {
      Buffer bx = upload_vec(dev, x);
      dev.rope(bx.view(SPECD_DTYPE_F32, m, n_head * hd), bp.view(SPECD_DTYPE_I32, 1, m), p);
      return download_vec<float>(bx, x.size());
    };
    specd_rope_params zeroed = yarn_params(yarn, n_head, hd, nullptr);
    zeroed.ext_factor = zeroed.attn_factor = zeroed.beta_fast = zeroed.beta_slow = 0.0f;
    zeroed.n_ctx_orig = 0;
    // A 0.2 host's struct ends before ext_factor: what lies beyond is not read.
    specd_rope_params old = yarn_params(yarn, n_head, hd, nullptr);
    old.struct_size = offsetof(specd_rope_params, ext_factor);
    REQUIRE(old.struct_size == 40);
    specd_rope_params unit = zeroed;  // attn_factor 1 is what 0 means
    unit.attn_factor = 1.0f;
    const auto want = run(zeroed);
    CHECK(std::memcmp(run(old).data(), want.data(), x.size() * 4) == 0);
    CHECK(std::memcmp(run(unit).data(), want.data(), x.size() * 4) == 0);
    // ... and it is 0.2's rope: YaRN's reference with ext_factor 0 and attn_factor 1.
    YarnCase plain = yarn;
    plain.ext_factor = 0.0f;
    plain.attn_factor = 1.0f;
    const auto ref = yarn_reference(x, pos, n_head, hd, plain, {});
    double worst = 0;
    for (size_t e = 0; e < x.size(); ++e) worst = std::max(worst, std::fabs(want[e] - ref[e]));
    CHECK_MESSAGE(worst <= 1e-5, ob.backend->name() << ": worst error " << worst);
    // The full struct with YaRN differs (the fields are read when struct_size covers them).
    CHECK(run(yarn_params(yarn, n_head, hd, nullptr)) != want);
  }
}

TEST_CASE("rope: bad YaRN fields are refused") {
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    Buffer bx = dev.alloc(2 * 8 * 4), bp = upload_vec(dev, std::vector<int32_t>{1, 2});
    const View vx = bx.view(SPECD_DTYPE_F32, 2, 8), vp = bp.view(SPECD_DTYPE_I32, 1, 2);
    const YarnCase c = {"", SPECD_ROPE_NEOX, 8, kGptOssBase, 0.25f, 1.0f, 0.0f, false};
    const specd_rope_params good = yarn_params(c, 1, 8, nullptr);
    dev.rope(vx, vp, good);
    auto refused = [&](auto change, const char* what) {
      specd_rope_params bad = good;
      change(bad);
      CHECK_THROWS_WITH_AS(dev.rope(vx, vp, bad), doctest::Contains(what), Error);
    };
    refused([](specd_rope_params& p) { p.n_ctx_orig = 0; }, "n_ctx_orig");
    refused([](specd_rope_params& p) { p.beta_fast = 0.0f; }, "beta_fast");
    refused([](specd_rope_params& p) { p.beta_slow = -1.0f; }, "beta_slow");
    refused([](specd_rope_params& p) { p.base = 1.0f; }, "base");
    refused([](specd_rope_params& p) { p.attn_factor = -1.0f; }, "attn_factor");
    refused([](specd_rope_params& p) { p.ext_factor = INFINITY; }, "ext_factor");
  }
}

TEST_CASE("swiglu_oai clamps gate and up at the limit, strided and in place, row by row") {
  std::mt19937 rng(83);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    if (!dev.has_swiglu_oai()) {
      MESSAGE("skipping backend '" << ob.backend->name() << "': no swiglu_oai");
      continue;
    }
    // n = 100: vectors of 16 and 8 lanes and a tail. gate and up are the two halves of a fused
    // [m, 2n] projection, as strided views; many values lie beyond +-limit.
    const int64_t m = 6, n = 100;
    auto gu = random_floats(rng, m * 2 * n, 6.0f);
    auto gate_at = [&](int64_t i, int64_t j) -> float& { return gu[i * 2 * n + j]; };
    auto up_at = [&](int64_t i, int64_t j) -> float& { return gu[i * 2 * n + n + j]; };
    const float edges[] = {kLimit, -kLimit, 7.001f, -7.001f, 50.0f, -50.0f, -1e4f, 1e4f, 0.0f};
    for (int64_t k = 0; k < 9; ++k) {
      gate_at(0, k) = up_at(0, k) = edges[k];
      up_at(1, k) = -1.0f;  // u + 1 = 0
      gate_at(3, k) = edges[8 - k];
      // At the end of a row too: the vector loops' tail (96..99) is scalar.
      gate_at(4, n - 9 + k) = edges[k];
      up_at(4, n - 9 + k) = edges[8 - k];
    }
    gate_at(5, 10) = up_at(5, n - 2) = NAN;  // NaN stays NaN, in a vector and in the tail
    Buffer bgu = upload_vec(dev, gu), by = dev.alloc(m * n * 4);
    const View gate = bgu.view(SPECD_DTYPE_F32, m, n, 0, 2 * n * 4);
    const View up = bgu.view(SPECD_DTYPE_F32, m, n, n * 4, 2 * n * 4);
    const View vy = by.view(SPECD_DTYPE_F32, m, n);
    dev.swiglu_oai(gate, up, kAlpha, kLimit, vy);
    const auto y = download_vec<float>(by, m * n);
    double worst = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double want =
            swiglu_oai_reference(gu[i * 2 * n + j], gu[i * 2 * n + n + j], kAlpha, kLimit);
        if (std::isnan(want)) {
          CHECK(std::isnan(y[i * n + j]));
          continue;
        }
        const double err = std::fabs(y[i * n + j] - want) / (std::fabs(want) + 1e-30);
        if (want == 0.0) CHECK(y[i * n + j] == 0.0f);
        worst = std::max(worst, want == 0.0 ? 0.0 : err);
      }
    CHECK_MESSAGE(worst <= 1e-5, ob.backend->name() << ": worst relative error " << worst);

    // Each row alone gives the same bits as in the batch.
    for (int64_t i = 0; i < m; ++i) {
      dev.swiglu_oai(gate.slice_rows(i, 1), up.slice_rows(i, 1), kAlpha, kLimit,
                     vy.slice_rows(0, 1));
      const auto one = download_vec<float>(by, n);
      CHECK(std::memcmp(one.data(), y.data() + i * n, n * 4) == 0);
    }

    // In place: y = gate, then (from fresh inputs) y = up; the same bits.
    dev.swiglu_oai(gate, up, kAlpha, kLimit, gate);
    auto after = download_vec<float>(bgu, gu.size());
    for (int64_t i = 0; i < m; ++i)
      CHECK(std::memcmp(after.data() + i * 2 * n, y.data() + i * n, n * 4) == 0);
    bgu.upload(gu.data(), gu.size() * 4);
    dev.swiglu_oai(gate, up, kAlpha, kLimit, up);
    after = download_vec<float>(bgu, gu.size());
    for (int64_t i = 0; i < m; ++i)
      CHECK(std::memcmp(after.data() + i * 2 * n + n, y.data() + i * n, n * 4) == 0);
  }
}

TEST_CASE("swiglu_oai: bad arguments are refused") {
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    if (!dev.has_swiglu_oai()) continue;
    Buffer b = dev.alloc(3 * 16 * 4);
    const View g = b.view(SPECD_DTYPE_F32, 2, 16), u = b.view(SPECD_DTYPE_F32, 2, 16, 64);
    Buffer by = dev.alloc(2 * 16 * 4);
    const View y = by.view(SPECD_DTYPE_F32, 2, 16);
    CHECK_THROWS_WITH_AS(dev.swiglu_oai(g, u, kAlpha, 0.0f, y), doctest::Contains("limit"), Error);
    CHECK_THROWS_WITH_AS(dev.swiglu_oai(g, u, kAlpha, NAN, y), doctest::Contains("limit"), Error);
    CHECK_THROWS_WITH_AS(dev.swiglu_oai(g, u, NAN, kLimit, y), doctest::Contains("alpha"), Error);
    CHECK_THROWS_WITH_AS(dev.swiglu_oai(g, by.view(SPECD_DTYPE_F32, 1, 16), kAlpha, kLimit, y),
                         doctest::Contains("swiglu_oai: up is [1, 16]"), Error);
    CHECK_THROWS_WITH_AS(dev.swiglu_oai(g, u, kAlpha, kLimit, b.view(SPECD_DTYPE_F32, 2, 16, 160)),
                         doctest::Contains("swiglu_oai: y"), Error);  // outside its buffer
  }
}

TEST_CASE("Device refuses YaRN, swiglu_oai, windows and sinks on an older backend, naming it") {
  const LoadedPlugin& cpu = registry().require("cpu", SPECD_KIND_BACKEND);
  // The CPU plugin driven as a 0.7 backend: it has the slot, but its minor says it may not.
  LoadedPlugin old = cpu;
  old.abi_minor = 7;
  Backend old_backend(old);
  auto dev = old_backend.open();
  Buffer bx = dev->alloc(2 * 8 * 4), bp = upload_vec(*dev, std::vector<int32_t>{1, 2});
  const View vx = bx.view(SPECD_DTYPE_F32, 2, 8), vp = bp.view(SPECD_DTYPE_I32, 1, 2);
  const YarnCase c = {"", SPECD_ROPE_NEOX, 8, kGptOssBase, 0.25f, 1.0f, 0.0f, false};
  std::string e = usage_error_of([&] { dev->rope(vx, vp, yarn_params(c, 1, 8, nullptr)); });
  CHECK_MESSAGE((contains(e, "'cpu'") && contains(e, "needs ABI 0.8")), e);
  specd_rope_params plain = yarn_params(c, 1, 8, nullptr);
  plain.ext_factor = 0.0f;
  dev->rope(vx, vp, plain);          // zeroed YaRN fields: any backend
  specd_rope_params scaled = plain;  // attn_factor alone is YaRN's too
  scaled.attn_factor = 2.0f;
  e = usage_error_of([&] { dev->rope(vx, vp, scaled); });
  CHECK_MESSAGE((contains(e, "'cpu'") && contains(e, "needs ABI 0.8")), e);
  CHECK_FALSE(dev->has_swiglu_oai());
  e = usage_error_of([&] { dev->swiglu_oai(vx, vx, kAlpha, kLimit, vx); });
  CHECK_MESSAGE((contains(e, "'cpu'") && contains(e, "needs ABI 0.8")), e);
  // A window or sinks would be ignored by a 0.7 backend: refused before the call.
  specd_attention_params ap{};
  ap.struct_size = sizeof(ap);
  ap.n_head = ap.n_head_kv = 1;
  ap.head_dim = 8;
  ap.scale = 1.0f;
  ap.window = 4;
  e = usage_error_of([&] { dev->attention(vx, vx, vx, vp, vp, nullptr, ap, vx); });
  CHECK_MESSAGE((contains(e, "'cpu'") && contains(e, "needs ABI 0.8")), e);
  ap.window = 0;
  ap.sinks = vx.raw();
  e = usage_error_of([&] { dev->attention(vx, vx, vx, vp, vp, nullptr, ap, vx); });
  CHECK_MESSAGE((contains(e, "'cpu'") && contains(e, "needs ABI 0.8")), e);
  e = usage_error_of(
      [&] { dev->attention_paged(vx, vx, vx, vp, vp, nullptr, 16, vp, vp, ap, vx); });
  CHECK_MESSAGE((contains(e, "'cpu'") && contains(e, "needs ABI 0.8")), e);

  // A 0.8 backend without the (optional) slot.
  specd_backend_vtable vt = *static_cast<const specd_backend_vtable*>(cpu.vtable);
  vt.swiglu_oai = nullptr;
  LoadedPlugin slotless = cpu;
  slotless.vtable = &vt;
  Backend slotless_backend(slotless);
  auto dev2 = slotless_backend.open();
  Buffer b2 = dev2->alloc(2 * 8 * 4);
  const View v2 = b2.view(SPECD_DTYPE_F32, 2, 8);
  CHECK_FALSE(dev2->has_swiglu_oai());
  e = usage_error_of([&] { dev2->require_swiglu_oai("gpt-oss"); });
  CHECK_MESSAGE((contains(e, "'cpu'") && contains(e, "does not implement swiglu_oai") &&
                 contains(e, "which gpt-oss needs")),
                e);
  e = usage_error_of([&] { dev2->swiglu_oai(v2, v2, kAlpha, kLimit, v2); });
  CHECK_MESSAGE(contains(e, "does not implement swiglu_oai"), e);

  // A gpt-oss file is refused when it loads, naming what it needs (its weights are zeros: no
  // pass runs).
  LlamaLayout oss;
  oss.architecture = "gpt-oss";
  oss.head_dim = 8;
  oss.yarn_scale = 32.0f;
  GgufWriter w;
  set_llama_metadata(w, oss);
  for (const LlamaTensor& t : llama_tensors(oss)) {
    int64_t n = 1;
    for (int64_t x : t.ne) n *= x;
    const std::vector<float> zeros(static_cast<size_t>(n), 0.0f);
    w.add_tensor_f32(t.name, GgmlType::kF32, t.ne, zeros.data());
  }
  const std::string path = std::string(SPECD_BINARY_DIR) + "/abi-0-8-gpt-oss.gguf";
  w.write(path);
  OpenBackend current = open_cpu(1);
  CHECK(LlamaModel::load(path, *current.device)->info().sliding_window == 8);
  e = usage_error_of([&] { LlamaModel::load(path, *dev); });
  CHECK_MESSAGE((contains(e,
                          "abi-0-8-gpt-oss.gguf (architecture 'gpt-oss': sliding-window "
                          "attention, attention sinks, YaRN rope scaling, the clamped SwiGLU") &&
                 contains(e, "needs ABI 0.8")),
                e);
  e = usage_error_of([&] { LlamaModel::load(path, *dev2); });
  CHECK_MESSAGE((contains(e, "does not implement swiglu_oai") &&
                 contains(e, "abi-0-8-gpt-oss.gguf (architecture 'gpt-oss')")),
                e);
}
