// The CPU backend's large-buffer memory (plugins/cpu/huge_pages.hpp): packed weight matrices
// lie one after another in 2 MiB-aligned chunks that are freed with their last matrix, and a
// buffer size the device cannot hold is refused instead of wrapping around.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../../plugins/cpu/huge_pages.hpp"
#include "backend_test_util.hpp"

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
  std::vector<float> back(x.size());
  b.download(back.data(), back.size() * 4);
  CHECK(back == x);
}
