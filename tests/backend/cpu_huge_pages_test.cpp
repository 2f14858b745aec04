// The CPU backend's memory for weights and large buffers (plugins/cpu/runtime/huge_pages.hpp):
// weight matrices lie one after another in 2 MiB-aligned chunks that are freed with their last
// matrix; with huge pages, matrices it does not pack are copied there too (read back as the same
// bits, read-only), and SPECD_CPU_HUGE_PAGES=0 leaves them where the file maps them; a buffer size
// the device cannot hold is refused instead of wrapping around.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "backend_test_util.hpp"
#include "runtime/huge_pages.hpp"

using namespace specd;
using namespace specd::test;
using specd::cpu::kHugePageBytes;
using specd::cpu::WeightArena;

TEST_CASE("weight arena: matrices packed into 2 MiB-aligned chunks, freed with the last") {
  WeightArena arena;
  const uint64_t matrix = 1'622'016;  // a 2816 x 1024 q4_K matrix
  std::vector<std::pair<uint8_t*, WeightArena::Chunk*>> small;
  for (int i = 0; i < 3; ++i) {
    WeightArena::Chunk* c = nullptr;
    uint8_t* p = arena.allocate(matrix + 8 * i, c);  // odd sizes: the next one still aligned
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % 64 == 0);
    std::memset(p, i + 1, matrix + 8 * i);  // all of it writable (ASan checks the bounds)
    small.emplace_back(p, c);
  }
  CHECK(reinterpret_cast<uintptr_t>(small[0].first) % kHugePageBytes == 0);
  CHECK(small[1].second == small[0].second);  // one chunk holds several matrices
  CHECK(small[2].first >= small[1].first + matrix + 8);
  CHECK(small[0].first[matrix - 1] == 1);  // the later ones did not overlap it
  CHECK(arena.chunks() == 1);

  WeightArena::Chunk* big_chunk = nullptr;
  const uint64_t big = 40ull << 20;  // more than a chunk: a chunk of its own size
  uint8_t* b = arena.allocate(big, big_chunk);
  REQUIRE(b != nullptr);
  std::memset(b, 7, big);
  CHECK(big_chunk != small[0].second);
  CHECK(arena.chunks() == 2);

  for (auto& [p, c] : small) arena.release(c);
  CHECK(arena.chunks() == 1);  // the first chunk went with its last matrix
  WeightArena::Chunk* c = nullptr;
  CHECK(arena.allocate(0, c) == nullptr);
  CHECK(arena.allocate(UINT64_MAX - 10, c) == nullptr);
  CHECK(arena.chunks() == 1);
  arena.release(big_chunk);
  CHECK(arena.chunks() == 0);
}

TEST_CASE("cpu buffer_alloc: a size near 2^64 is refused, large ones are usable") {
  const OpenBackend cpu = open_cpu(1);
  Device& dev = *cpu.device;
  for (uint64_t size : {UINT64_MAX, UINT64_MAX - 62}) {
    INFO(size);
    CHECK_THROWS_AS(dev.alloc(size), Error);
  }
  const std::vector<float> x(3 << 19, 1.5f);  // 6 MiB: on huge pages where the kernel gives them
  Buffer b = upload_vec(dev, x);
  CHECK(download_vec<float>(b, x.size()) == x);
}

namespace {

// Resident memory of this process, from /proc/self/statm (pages).
uint64_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  REQUIRE(f != nullptr);
  unsigned long long size = 0, resident = 0;
  CHECK(std::fscanf(f, "%llu %llu", &size, &resident) == 2);
  std::fclose(f);
  return resident * 4096ull;
}

}  // namespace

TEST_CASE("cpu buffer_alloc: a large buffer costs what is written of it, not its size") {
  const OpenBackend cpu = open_cpu(1);
  Device& dev = *cpu.device;
  // 64 GiB, more than these machines have: address space, backed as rows are written (a
  // server's KV pool is sized for its whole budget this way).
  const uint64_t size = 64ull << 30;
  const uint64_t before = resident_bytes();
  Buffer b = dev.alloc(size);
  const std::vector<float> row(1024, 2.5f);
  for (uint64_t at : {uint64_t{0}, size / 2, size - 4096}) b.upload(row.data(), 4096, at);
  std::vector<float> back(1024);
  b.download(back.data(), 4096, size / 2);
  CHECK(back == row);
  // Three rows written: at most three huge pages (and some slack) became resident.
  CHECK(resident_bytes() < before + 3 * kHugePageBytes + (16ull << 20));
}

TEST_CASE("cpu buffer_wrap_weights: unpacked matrices copied for huge pages, or wrapped with 0") {
  std::mt19937 rng(7);
  const int64_t n = 48, k = 256;
  auto w = encode(SPECD_DTYPE_Q5_K, random_floats(rng, static_cast<size_t>(n * k)), n, k);
  const std::vector<uint8_t> original = w;
  const auto x = random_floats(rng, static_cast<size_t>(3 * k));
  std::vector<float> reference;
  for (const char* setting : {"0", "1"}) {
    CAPTURE(setting);
    const ScopedEnv huge("SPECD_CPU_HUGE_PAGES", setting);
    const OpenBackend cpu = open_cpu(1);
    Device& dev = *cpu.device;
    bool copied = false;
    Buffer given = dev.wrap_weights(w.data(), w.size(), SPECD_DTYPE_Q5_K, n, k, copied);
    const bool expect_copy = specd::cpu::huge_pages_wanted();  // "1": the kernel's setting
    CHECK(copied == expect_copy);
    if (copied) std::fill(w.begin(), w.end(), 0);  // a copy no longer reads the caller's bytes
    Buffer bx = upload_vec(dev, x), by = dev.alloc(3 * n * 4);
    dev.matmul(bx.view(SPECD_DTYPE_F32, 3, k), given.view(SPECD_DTYPE_Q5_K, n, k),
               by.view(SPECD_DTYPE_F32, 3, n));
    const auto y = download_vec<float>(by, static_cast<size_t>(3 * n));
    if (reference.empty())
      reference = y;
    else
      CHECK(y == reference);  // the same bits either way
    CHECK(download_vec<uint8_t>(given, original.size()) == original);
    CHECK_THROWS_AS(given.upload(original.data(), 64), Error);  // weights stay read-only
    w = original;
  }
}

TEST_CASE("cpu: SPECD_CPU_HUGE_PAGES other than 0 and 1 is refused, naming it") {
  const ScopedEnv huge("SPECD_CPU_HUGE_PAGES", "yes");
  CHECK(cpu_open_error().find("SPECD_CPU_HUGE_PAGES=yes") != std::string::npos);
}
