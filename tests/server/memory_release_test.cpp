// Freed heap memory goes back to the system once asked (common/memory_release.hpp): memory
// freed below a live block, which glibc keeps for the process however long it lives.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "common/memory_release.hpp"

namespace {

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

TEST_CASE("memory freed below a live block is returned after release_freed_memory()") {
#if defined(__SANITIZE_ADDRESS__)
  return;  // the sanitizer's allocator, not glibc's, holds the memory
#endif
  specd::trim_heap_eagerly();
  // 160 MiB in blocks under the mmap threshold, so they come from the heap, then one small
  // block above them: freeing the large ones leaves a hole that trimming the top cannot give
  // back.
  std::vector<void*> blocks;
  for (int i = 0; i < 2560; ++i) {
    void* p = std::malloc(64 * 1024);
    REQUIRE(p != nullptr);
    std::memset(p, 1, 64 * 1024);
    blocks.push_back(p);
  }
  void* pin = std::malloc(64);
  const size_t full = resident_bytes();
  for (void* p : blocks) std::free(p);
  const uint64_t before = specd::memory_releases();
  specd::release_freed_memory();
  for (int i = 0; i < 300 && specd::memory_releases() == before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(specd::memory_releases() > before);
  const size_t after = resident_bytes();
  CAPTURE(full);
  CAPTURE(after);
  CHECK(full - after > size_t{128} << 20);
  std::free(pin);
}
