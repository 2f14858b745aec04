// The CPU backend's rms_norm (plugins/cpu/ops/ops.cpp) is one fixed sequence per row: the squares
// of the row's values made double (exact) and added in column order from 0, s = f32(1 / sqrt(sum /
// n
// + eps)), then (x * s) * w in f32. It sums several rows side by side (and the rows of a group on
// one thread): the bits must be those of the definition for any number of rows and threads. A
// sum taken in another order seldom moves s; what this catches is a row given another row's sum,
// a row left out of a group, or a scaling done otherwise. The tests build for the baseline x86-64
// instruction set, which has no fused multiply-add to contract the products into.
#include <cmath>
#include <cstring>

#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

TEST_CASE("cpu rms_norm: the bits of the definition for any number of rows") {
  std::mt19937 rng(13);
  const OpenBackend cpu = open_cpu(2);
  Device* const dev = cpu.device.get();
  const int64_t n = 1000;
  const float eps = 1e-5f;
  const auto w = random_floats(rng, n, 2.0f);
  Buffer bw = upload_vec(*dev, w);
  for (int64_t m : {1, 2, 3, 4, 5, 7, 8, 9, 17, 40}) {  // 17 and 40 rows go to the threads
    const auto x = random_floats(rng, m * n, 3.0f);
    Buffer bx = upload_vec(*dev, x), by = dev->alloc(m * n * 4);
    dev->rms_norm(bx.view(SPECD_DTYPE_F32, m, n), bw.view(SPECD_DTYPE_F32, 1, n), eps,
                  by.view(SPECD_DTYPE_F32, m, n));
    const auto y = download_vec<float>(by, m * n);
    int64_t differ = 0;
    for (int64_t i = 0; i < m; ++i) {
      const float* xi = x.data() + i * n;
      double ss = 0;
      for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(xi[j]) * xi[j];
      const float s = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
      for (int64_t j = 0; j < n; ++j) {
        const float want = (xi[j] * s) * w[j];
        if (std::memcmp(&want, &y[i * n + j], 4) != 0) ++differ;
      }
    }
    CHECK_MESSAGE(differ == 0, m << " rows: " << differ << " values differ");
  }
}
