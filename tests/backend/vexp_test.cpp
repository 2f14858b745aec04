// The CPU backend's exp (plugins/cpu/ops/vexp.hpp): the scalar definition's accuracy against exp,
// its limits, the AVX2 and AVX-512 versions giving its bits on every element, and the swiglu
// and attention ops that use it (cpu_attention_test.cpp) giving the bits of that definition.
#include <cmath>
#include <cstring>

#include "backend_test_util.hpp"
#include "ops/vexp.hpp"
#include "test_skip.hpp"

using namespace specd;
using namespace specd::test;
using specd::cpu::exp_ref;

namespace {

// Every stride-th float in [lo, hi], both ends included.
std::vector<float> sweep(float lo, float hi, uint32_t stride) {
  std::vector<float> xs;
  for (float x = lo; x < hi;) {
    xs.push_back(x);
    uint32_t b;
    std::memcpy(&b, &x, 4);
    b = x < 0 ? (b > stride + 0x80000000u ? b - stride : 0) : b + stride;
    std::memcpy(&x, &b, 4);
  }
  xs.push_back(hi);
  return xs;
}

std::vector<float> special_values() {
  return {0.0f,    -0.0f,    1.0f,        -1.0f,   INFINITY,    -INFINITY,   NAN,     -NAN,
          88.72f,  88.7228f, 88.73f,      89.0f,   89.5f,       1e30f,       -87.3f,  -87.34f,
          -100.0f, -103.97f, -104.0f,     -104.5f, -1e30f,      1e-30f,      -1e-30f, 0.5f,
          0.3466f, -0.3466f, 0.34657359f, 1e-45f,  12582912.0f, -12582912.0f};
}

[[gnu::target("avx512f")]] void exp_avx512(const std::vector<float>& in, std::vector<float>& out) {
  size_t j = 0;
  for (; j + 16 <= in.size(); j += 16)
    _mm512_storeu_ps(out.data() + j, specd::cpu::exp16(_mm512_loadu_ps(in.data() + j)));
  for (; j < in.size(); ++j) out[j] = exp_ref(in[j]);
}

[[gnu::target("avx2")]] void exp_avx2(const std::vector<float>& in, std::vector<float>& out) {
  size_t j = 0;
  for (; j + 8 <= in.size(); j += 8)
    _mm256_storeu_ps(out.data() + j, specd::cpu::exp8(_mm256_loadu_ps(in.data() + j)));
  for (; j < in.size(); ++j) out[j] = exp_ref(in[j]);
}

int count_differ(const std::vector<float>& a, const std::vector<float>& b) {
  int differ = 0;
  for (size_t j = 0; j < a.size(); ++j)
    if (std::memcmp(&a[j], &b[j], 4) != 0) ++differ;
  return differ;
}

}  // namespace

TEST_CASE("cpu exp_ref: relative error below 1.5e-7 over [-87.3, 88.7], exact limits") {
  double worst = 0;
  float at = 0;
  for (float x : sweep(-87.3f, 88.7f, 1013)) {
    const double want = std::exp(double(x));
    const double rel = std::fabs(exp_ref(x) - want) / want;
    if (rel > worst) worst = rel, at = x;
  }
  MESSAGE("largest relative error " << worst << " at x = " << at);
  CHECK_MESSAGE(worst < 1.5e-7, "relative error " << worst << " at x = " << at);
  CHECK(worst > 0.0);  // f32 results of irrational values: some rounding must show
  CHECK(exp_ref(0.0f) == 1.0f);
  CHECK(exp_ref(-0.0f) == 1.0f);
  CHECK(exp_ref(INFINITY) == INFINITY);
  CHECK(exp_ref(89.0f) == INFINITY);
  CHECK(exp_ref(88.72f) < INFINITY);
  CHECK(exp_ref(-INFINITY) == 0.0f);
  CHECK(exp_ref(-104.0f) == 0.0f);
  CHECK(std::isnan(exp_ref(NAN)));
  // Subnormal results: within one subnormal step (2^-149) of exp.
  for (float x : sweep(-103.9f, -87.4f, 100003))
    CHECK_MESSAGE(std::fabs(exp_ref(x) - std::exp(double(x))) <= 0x1p-149,
                  "x = " << x << ": " << exp_ref(x) << " vs " << std::exp(double(x)));
}

TEST_CASE("cpu exp: the AVX2 and AVX-512 versions give exp_ref's bits on every element" *
          SPECD_MAY_SKIP) {
  std::vector<float> in = sweep(-110.0f, 95.0f, 4093);
  for (float x : special_values()) in.push_back(x);
  for (int tail = 0; tail < 7; ++tail) in.push_back(-0.25f * float(tail));  // odd length
  std::vector<float> want(in.size()), got(in.size());
  for (size_t j = 0; j < in.size(); ++j) want[j] = exp_ref(in[j]);
  if (__builtin_cpu_supports("avx2")) {
    exp_avx2(in, got);
    CHECK_MESSAGE(count_differ(want, got) == 0, "AVX2: " << count_differ(want, got) << " differ");
  } else {
    ::specd::test::skip_here("AVX2 is not supported by this CPU");
  }
  if (__builtin_cpu_supports("avx512f")) {
    exp_avx512(in, got);
    CHECK_MESSAGE(count_differ(want, got) == 0,
                  "AVX-512: " << count_differ(want, got) << " differ");
  } else {
    ::specd::test::skip_here("AVX-512 is not supported by this CPU");
  }
}

TEST_CASE("cpu swiglu: every row gives the bits of g / (1 + exp_ref(-g)) * u, whatever m") {
  std::mt19937 rng(41);
  Backend backend(registry().require("cpu", SPECD_KIND_BACKEND));
  DeviceOptions opt;
  opt.threads = 2;
  auto dev = backend.open(opt);
  for (int64_t n : {int64_t{7}, int64_t{103}, int64_t{2048}}) {
    const int64_t max_m = 6;
    auto g = random_floats(rng, max_m * n, 30.0f), u = random_floats(rng, max_m * n);
    g[0] = 95.0f;   // exp(-g) underflows
    g[1] = -95.0f;  // exp(-g) overflows: g / inf
    std::vector<float> want(max_m * n);
    for (int64_t e = 0; e < max_m * n; ++e) want[e] = g[e] / (1.0f + exp_ref(-g[e])) * u[e];
    Buffer bg = upload_vec(*dev, g), bu = upload_vec(*dev, u), by = dev->alloc(max_m * n * 4);
    for (int64_t m = 1; m <= max_m; ++m) {
      const int64_t first = max_m - m;
      dev->swiglu(bg.view(SPECD_DTYPE_F32, max_m, n).slice_rows(first, m),
                  bu.view(SPECD_DTYPE_F32, max_m, n).slice_rows(first, m),
                  by.view(SPECD_DTYPE_F32, m, n));
      const auto y = download_vec<float>(by, m * n);
      int differ = 0;
      for (int64_t e = 0; e < m * n; ++e)
        if (std::memcmp(&y[e], &want[first * n + e], 4) != 0) ++differ;
      CHECK_MESSAGE(differ == 0, "n " << n << ", m " << m << ": " << differ << " values differ");
    }
  }
}
