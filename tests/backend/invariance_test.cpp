// Batch invariance (backend.h contract): for m <= 64 every output row has the same bits
// whatever m, the row's place in the batch and the thread count.
#include <cstring>

#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

TEST_CASE("matmul rows are bit-identical for m = 1..64, every weight dtype") {
  std::mt19937 rng(11);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    if (!dev.batch_invariant()) {
      MESSAGE("skipping " << ob.backend->name() << ": does not declare batch invariance");
      continue;
    }
    const uint32_t max_m = std::min<uint32_t>(64, dev.info().invariant_max_rows);
    for (specd_dtype dt : kWeightTypes) {
      const int64_t k = dt == SPECD_DTYPE_Q8_0 ? 192 : 200, n = 45;
      auto x = random_floats(rng, max_m * k);
      auto wb = encode(dt, random_floats(rng, n * k), n, k);
      Buffer bx = upload_vec(dev, x), bw = upload_vec(dev, wb), by = dev.alloc(max_m * n * 4);
      const View w = bw.view(dt, n, k);
      // Reference: every row alone (m = 1).
      std::vector<float> single(max_m * n);
      for (uint32_t i = 0; i < max_m; ++i) {
        dev.matmul(bx.view(SPECD_DTYPE_F32, max_m, k).slice_rows(i, 1), w,
                   by.view(SPECD_DTYPE_F32, 1, n));
        by.download(single.data() + i * n, n * 4);
      }
      bool all_same = true;
      for (uint32_t m = 1; m <= max_m; ++m) {
        // Rows [max_m - m, max_m): every row lands at a different place in the batch.
        const uint32_t first = max_m - m;
        dev.matmul(bx.view(SPECD_DTYPE_F32, max_m, k).slice_rows(first, m), w,
                   by.view(SPECD_DTYPE_F32, m, n));
        auto y = download_vec<float>(by, m * n);
        if (std::memcmp(y.data(), single.data() + first * n, m * n * 4) != 0) {
          all_same = false;
          INFO(dtype_name(dt) << " m=" << m);
          CHECK(false);
        }
      }
      CHECK_MESSAGE(all_same, dtype_name(dt));
    }
  }
}

TEST_CASE("matmul results do not depend on the thread count") {
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
