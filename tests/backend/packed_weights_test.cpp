// buffer_wrap_weights (ABI 0.4) on the CPU backend: q4_K, q6_K and q8_0 matrices handed over this
// way are packed for the AVX-512 kernels (plugins/cpu/qint/packed_weights.hpp) where they run.
// Whatever the layout, every read must give what the same matrix wrapped in place gives, bit for
// bit: matmul at every m and row slice, get_rows and download.
#include <cstring>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "backend_test_util.hpp"
#include "specd/cpp/backend.hpp"
#include "test_skip.hpp"

using namespace specd;
using namespace specd::test;

namespace {

std::vector<uint8_t> bytes_of(const Buffer& b, uint64_t size, uint64_t offset = 0) {
  std::vector<uint8_t> out(size);
  b.download(out.data(), size, offset);
  return out;
}

// y = x · wᵀ for x [m, k] (random, seeded) and the weight view w ([n, k]).
std::vector<uint8_t> product(Device& dev, const View& w, int64_t m, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto x = random_floats(rng, static_cast<size_t>(m * w.cols()));
  Buffer bx = upload_vec(dev, x), by = dev.alloc(static_cast<uint64_t>(m * w.rows() * 4));
  dev.matmul(bx.view(SPECD_DTYPE_F32, m, w.cols()), w, by.view(SPECD_DTYPE_F32, m, w.rows()));
  return bytes_of(by, static_cast<uint64_t>(m * w.rows() * 4));
}

struct Pair {
  Buffer plain, given;  // wrapped in place; handed over with wrap_weights
  bool copied = false;
};

Pair hand_over(Device& dev, std::vector<uint8_t>& w, specd_dtype dtype, int64_t n, int64_t k) {
  Pair p;
  p.plain = dev.wrap_host(w.data(), w.size());
  p.given = dev.wrap_weights(w.data(), w.size(), dtype, n, k, p.copied);
  return p;
}

}  // namespace

TEST_CASE(
    "cpu: q4_K, q6_K and q8_0 weights handed over with buffer_wrap_weights read as the same bits") {
  const ScopedEnv quant("SPECD_CPU_QUANT", "int8");
  const OpenBackend cpu = open_cpu(2);
  Device* const dev = cpu.device.get();
  std::mt19937 rng(41);
  // Row counts: one group, a short last group, several groups, fewer rows than a group; three
  // blocks per row leave q6_K groups that end off a 64-byte boundary (padded); q8_0 also rows
  // of an odd number of blocks (a last block without a pair).
  using Shapes = std::vector<std::pair<int64_t, int64_t>>;
  const Shapes common = {{16, 256}, {37, 512}, {100, 1024}, {5, 256}, {37, 768}};
  Shapes q8_0 = common;
  q8_0.insert(q8_0.end(), {{37, 96}, {20, 160}, {16, 32}});
  for (const specd_dtype dtype : {SPECD_DTYPE_Q4_K, SPECD_DTYPE_Q6_K, SPECD_DTYPE_Q8_0})
    for (const auto& [n, k] : dtype == SPECD_DTYPE_Q8_0 ? q8_0 : common) {
      CAPTURE(sdk::dtype_name(dtype));
      CAPTURE(n);
      CAPTURE(k);
      auto w = encode(dtype, random_floats(rng, static_cast<size_t>(n * k)), n, k);
      const std::vector<uint8_t> original = w;
      Pair p = hand_over(*dev, w, dtype, n, k);
      if (!p.copied)
        MESSAGE("weights are not packed here (no AVX-512 VNNI): the wrapped path is checked");
      const uint64_t row_bytes = w.size() / static_cast<uint64_t>(n);
      std::vector<uint8_t> keep;
      if (p.copied) {  // a copied matrix must not be read from `data` any more
        std::fill(w.begin(), w.end(), 0);
        keep = original;
        p.plain = dev->wrap_host(keep.data(), keep.size());
      }
      const View plain = p.plain.view(dtype, n, k);
      const View given = p.given.view(dtype, n, k);
      // m up to the batch-invariant limit and past it (the packed kernel in 64-row chunks).
      for (int64_t m : {1, 2, 7, 8, 9, 16, 33, 64, 65, 80, 130}) {
        CAPTURE(m);
        CHECK(product(*dev, given, m, 7) == product(*dev, plain, m, 7));
      }
      // Row slices: from a group's first row (the kernel) and from inside a group (unpacked).
      for (const auto& [first, count] : std::vector<std::pair<int64_t, int64_t>>{
               {0, 1}, {16, n - 16}, {32, n - 32}, {5, n - 5}, {n - 1, 1}}) {
        if (first < 0 || count <= 0 || first + count > n) continue;
        CAPTURE(first);
        CHECK(product(*dev, given.slice_rows(first, count), 8, 9) ==
              product(*dev, plain.slice_rows(first, count), 8, 9));
      }
      // get_rows: any order, repeats.
      const std::vector<int32_t> ids = {static_cast<int32_t>(n - 1), 0, 3 % static_cast<int32_t>(n),
                                        static_cast<int32_t>(n / 2), static_cast<int32_t>(n - 1)};
      Buffer bid = upload_vec(*dev, ids);
      const int64_t m = static_cast<int64_t>(ids.size());
      Buffer y1 = dev->alloc(static_cast<uint64_t>(m * k * 4)),
             y2 = dev->alloc(static_cast<uint64_t>(m * k * 4));
      dev->get_rows(given, bid.view(SPECD_DTYPE_I32, 1, m), y1.view(SPECD_DTYPE_F32, m, k));
      dev->get_rows(plain, bid.view(SPECD_DTYPE_I32, 1, m), y2.view(SPECD_DTYPE_F32, m, k));
      CHECK(bytes_of(y1, static_cast<uint64_t>(m * k * 4)) ==
            bytes_of(y2, static_cast<uint64_t>(m * k * 4)));
      // download gives the GGUF bytes, whole or any range (buffer_copy reads them the same way).
      CHECK(bytes_of(p.given, original.size()) == original);
      const uint64_t off = row_bytes / 3, len = original.size() - off - 7;
      CHECK(bytes_of(p.given, len, off) ==
            std::vector<uint8_t>(original.begin() + static_cast<int64_t>(off),
                                 original.begin() + static_cast<int64_t>(off + len)));
    }
}

TEST_CASE("cpu: a packed q4_K buffer is refused where the ABI does not let the host use it" *
          SPECD_MAY_SKIP) {
  const ScopedEnv quant("SPECD_CPU_QUANT", "int8");
  // Without huge pages a copy is a packing (with them every matrix is copied).
  const ScopedEnv huge("SPECD_CPU_HUGE_PAGES", "0");
  Backend backend(registry().require("cpu", SPECD_KIND_BACKEND));
  auto dev = backend.open();
  std::mt19937 rng(5);
  const int64_t n = 32, k = 256;
  auto w = encode(SPECD_DTYPE_Q4_K, random_floats(rng, static_cast<size_t>(n * k)), n, k);
  bool copied = false;
  Buffer b = dev->wrap_weights(w.data(), w.size(), SPECD_DTYPE_Q4_K, n, k, copied);
  if (!copied) {
    ::specd::test::skip_here(
        "q4_K weights are not packed here (no AVX-512 VNNI): nothing to refuse");
    return;
  }
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(message([&] { b.upload(w.data(), 64); }).find("buffer_upload") != std::string::npos);
  Buffer y = dev->alloc(static_cast<uint64_t>(w.size()));
  Buffer ids = upload_vec(*dev, std::vector<int32_t>{0, 1});
  // copy_rows reads it as bytes of another use: refused, naming the op and the layout.
  const std::string e = message([&] {
    dev->copy_rows(b.view(SPECD_DTYPE_Q4_K, n, k), ids.view(SPECD_DTYPE_I32, 1, 2),
                   y.view(SPECD_DTYPE_Q4_K, 2, k));
  });
  CHECK(e.find("copy_rows") != std::string::npos);
  CHECK(e.find("packed") != std::string::npos);
  // A view that is not whole rows of its matrix (another dtype over the same bytes).
  Buffer x = upload_vec(*dev, std::vector<float>(static_cast<size_t>(k), 1.0f));
  CHECK(message([&] {
          dev->matmul(x.view(SPECD_DTYPE_F32, 1, k), b.view(SPECD_DTYPE_Q8_0, 4, k),
                      y.view(SPECD_DTYPE_F32, 1, 4));
        }).find("matmul") != std::string::npos);
}

// (With huge pages the device copies what it does not pack: cpu_huge_pages_test.cpp.)
TEST_CASE("cpu: buffer_wrap_weights wraps in place what it does not pack, and checks the size") {
  const ScopedEnv no_huge_pages("SPECD_CPU_HUGE_PAGES", "0");
  Backend backend(registry().require("cpu", SPECD_KIND_BACKEND));
  std::mt19937 rng(3);
  const int64_t n = 16, k = 256;
  auto w = encode(SPECD_DTYPE_Q4_K, random_floats(rng, static_cast<size_t>(n * k)), n, k);
  {  // the exact family never reads the packed layout
    const ExactQuant exact;
    auto dev = backend.open();
    bool copied = true;
    Buffer b = dev->wrap_weights(w.data(), w.size(), SPECD_DTYPE_Q4_K, n, k, copied);
    CHECK_FALSE(copied);
  }
  auto dev = backend.open();
  bool copied = true;
  auto q5 = encode(SPECD_DTYPE_Q5_K, random_floats(rng, static_cast<size_t>(n * k)), n, k);
  Buffer b = dev->wrap_weights(q5.data(), q5.size(), SPECD_DTYPE_Q5_K, n, k, copied);
  CHECK_FALSE(copied);
  std::string what;
  try {
    dev->wrap_weights(w.data(), w.size() - 1, SPECD_DTYPE_Q4_K, n, k, copied);
  } catch (const std::exception& e) {
    what = e.what();
  }
  CHECK(what.find("buffer_wrap_weights") != std::string::npos);
  CHECK(what.find("q4_K") != std::string::npos);
}
