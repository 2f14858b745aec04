// Batch invariance (backend.h contract): for m <= 64 every output row has the same bits
// whatever m, the row's place in the batch and the thread count.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

namespace {

// Rows of every m in 1..max_m (taken at shifting places of one batch) against each row alone.
void check_gemm_invariance(Device& dev, std::mt19937& rng) {
  const uint32_t max_m = std::min<uint32_t>(64, dev.info().invariant_max_rows);
  for (specd_dtype dt : kWeightTypes) {
    const uint32_t block = ggml::block_layout(dt).elements;
    const int64_t k = block == 256 ? 512 : block == 32 ? 192 : 203, n = 45;
    auto x = random_floats(rng, max_m * k);
    auto wf = random_floats(rng, n * k);
    auto wb = encode(dt, wf, n, k);
    auto wd = decode(dt, wb, n, k);
    Buffer bx = upload_vec(dev, x), bw = upload_vec(dev, wb), by = dev.alloc(max_m * n * 4);
    const View w = bw.view(dt, n, k);
    const std::vector<float> single =
        matmul_row_by_row(dev, bx.view(SPECD_DTYPE_F32, max_m, k), w, by);
    // The single rows are also accurate (so a broken kernel cannot pass by being constant).
    double worst = 0;
    for (uint32_t i = 0; i < max_m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, a = 0;
        for (int64_t c = 0; c < k; ++c) {
          s += double(x[i * k + c]) * wd[j * k + c];
          a += std::fabs(double(x[i * k + c]) * wd[j * k + c]);
        }
        worst = std::max(worst, std::fabs(single[i * n + j] - s) / a);
      }
    CHECK_MESSAGE(worst < 1e-5, dtype_name(dt) << " relative error " << worst);
    int mismatches = 0;
    for (uint32_t m = 1; m <= max_m; ++m) {
      const uint32_t first = max_m - m;
      dev.matmul(bx.view(SPECD_DTYPE_F32, max_m, k).slice_rows(first, m), w,
                 by.view(SPECD_DTYPE_F32, m, n));
      auto y = download_vec<float>(by, m * n);
      if (std::memcmp(y.data(), single.data() + first * n, m * n * 4) != 0) ++mismatches;
    }
    CHECK_MESSAGE(mismatches == 0, dtype_name(dt) << ": " << mismatches << " values of m differ");
  }
}

// For m <= 64 a quantized (or f16/bf16) matmul gives the bits of the f32 matmul over the
// exactly dequantized weights: decoding is exact and the f32 tiles are the same.
void check_equals_f32_weights(Device& dev, std::mt19937& rng) {
  for (specd_dtype dt : kWeightTypes) {
    const uint32_t block = ggml::block_layout(dt).elements;
    const int64_t k = block == 256 ? 512 : block == 32 ? 192 : 203, n = 21;
    auto wb = encode(dt, random_floats(rng, n * k), n, k);
    auto wd = decode(dt, wb, n, k);
    Buffer bq = upload_vec(dev, wb), bf = upload_vec(dev, wd);
    for (int64_t m : {1, 3, 5, 8, 64}) {
      auto x = random_floats(rng, m * k);
      Buffer bx = upload_vec(dev, x), by = dev.alloc(m * n * 4), bz = dev.alloc(m * n * 4);
      dev.matmul(bx.view(SPECD_DTYPE_F32, m, k), bq.view(dt, n, k), by.view(SPECD_DTYPE_F32, m, n));
      dev.matmul(bx.view(SPECD_DTYPE_F32, m, k), bf.view(SPECD_DTYPE_F32, n, k),
                 bz.view(SPECD_DTYPE_F32, m, n));
      auto y = download_vec<float>(by, m * n), z = download_vec<float>(bz, m * n);
      CHECK_MESSAGE(std::memcmp(y.data(), z.data(), y.size() * 4) == 0,
                    std::string(dtype_name(dt))
                        << " m=" << m << ": differs from the f32 weights' product");
    }
  }
}

}  // namespace

TEST_CASE("matmul rows are bit-identical for m = 1..64, every weight dtype") {
  const ExactQuant exact;  // accuracy below is f32's; qint_test.cpp covers the integer family
  std::mt19937 rng(11);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    if (!dev.batch_invariant()) {
      MESSAGE("skipping " << ob.backend->name() << ": does not declare batch invariance");
      continue;
    }
    MESSAGE("device: " << std::string(dev.info().name));
    check_gemm_invariance(dev, rng);
  }
}

TEST_CASE("cpu: every GEMM kernel this CPU runs is accurate and batch invariant") {
  const ExactQuant exact;  // equal bits to the f32 weights' product: the exact family
  std::mt19937 rng(13);
  for (const char* kernel : {"generic", "avx2", "avx512"}) {
    setenv("SPECD_CPU_KERNEL", kernel, 1);
    Backend backend(registry().require("cpu", SPECD_KIND_BACKEND));
    std::unique_ptr<Device> dev;
    try {
      dev = backend.open();
    } catch (const Error& e) {
      MESSAGE("skipping kernel " << std::string(kernel) << ": " << std::string(e.what()));
      continue;
    }
    MESSAGE("kernel " << std::string(kernel) << ": " << std::string(dev->info().name));
    check_gemm_invariance(*dev, rng);
    check_equals_f32_weights(*dev, rng);
  }
  unsetenv("SPECD_CPU_KERNEL");
}

TEST_CASE("matmul results do not depend on the thread count") {
  const auto ids = backend_ids();
  if (std::find(ids.begin(), ids.end(), "cpu") == ids.end()) {
    MESSAGE("skipping: the cpu backend is not among SPECD_TEST_BACKENDS");
    return;
  }
  std::mt19937 rng(12);
  std::vector<std::vector<float>> results;
  for (uint32_t threads : {1u, 2u, 3u}) {
    for (auto& ob : open_backends(threads)) {
      if (ob.backend->name() != "cpu") continue;
      Device& dev = *ob.device;
      std::mt19937 r2(12);
      const int64_t m = 9, k = 256, n = 300;
      auto x = random_floats(r2, m * k);
      auto wb = encode(SPECD_DTYPE_F16, random_floats(r2, n * k), n, k);
      Buffer bx = upload_vec(dev, x), bw = upload_vec(dev, wb), by = dev.alloc(m * n * 4);
      dev.matmul(bx.view(SPECD_DTYPE_F32, m, k), bw.view(SPECD_DTYPE_F16, n, k),
                 by.view(SPECD_DTYPE_F32, m, n));
      results.push_back(download_vec<float>(by, m * n));
    }
  }
  REQUIRE(results.size() == 3);
  CHECK(results[0] == results[1]);
  CHECK(results[0] == results[2]);
}
