#include "runtime/huge_pages.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace specd::cpu {

struct WeightArena::Chunk {
  uint8_t* data = nullptr;
  uint64_t capacity = 0, used = 0;
  int64_t live = 0;  // allocations not yet released
};

bool huge_pages_wanted() {
  if (const char* env = std::getenv("SPECD_CPU_HUGE_PAGES"); env && *env) {
    const std::string want = env;
    if (want == "0") return false;
    if (want != "1")
      throw std::invalid_argument("cpu: SPECD_CPU_HUGE_PAGES=" + want +
                                  " is unknown (0: weights stay where the file maps them and "
                                  "buffers in 4 KiB pages; 1, the default: huge pages)");
  }
  std::ifstream setting("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return std::getline(setting, line) && line.find("[never]") == std::string::npos;
}

void* alloc_huge_aligned(uint64_t size, bool advise) {
  void* p = nullptr;
  if (size == 0 || posix_memalign(&p, kHugePageBytes, size) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
  if (advise) madvise(p, size, MADV_HUGEPAGE);  // a hint: refused, the pages stay 4 KiB
#endif
  return p;
}

void* alloc_reserved(uint64_t size, bool advise) {
  if (size == 0 || size > (uint64_t{1} << 62)) return nullptr;
  // Map a huge page more than asked and trim both ends to the 2 MiB boundaries.
  const uint64_t span = size + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (base + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > base) munmap(raw, aligned - base);
  const uintptr_t end = base + span, used_end = aligned + size;
  if (end > used_end) munmap(reinterpret_cast<void*>(used_end), end - used_end);
  void* p = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  if (advise) madvise(p, size, MADV_HUGEPAGE);  // a hint: refused, the pages stay 4 KiB
#endif
  return p;
}

void free_reserved(void* p, uint64_t size) {
  if (p) munmap(p, size);
}

WeightArena::~WeightArena() {
  for (Chunk* c : chunks_) {
    std::free(c->data);
    delete c;
  }
}

uint8_t* WeightArena::allocate(uint64_t size, Chunk*& chunk) {
  // 32 MiB chunks: 16 huge pages, a few chunks for a small model.
  constexpr uint64_t kChunkBytes = 16 * kHugePageBytes;
  const uint64_t need = (size + 63) / 64 * 64;
  if (size == 0 || need < size) return nullptr;
  Chunk* c = chunks_.empty() ? nullptr : chunks_.back();
  if (!c || c->capacity - c->used < need) {
    const uint64_t capacity =
        std::max(kChunkBytes, (need + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
    if (capacity < need) return nullptr;
    auto* data = static_cast<uint8_t*>(alloc_huge_aligned(capacity, advise_));
    if (!data) return nullptr;
    c = new Chunk{data, capacity, 0, 0};
    chunks_.push_back(c);
  }
  uint8_t* p = c->data + c->used;
  c->used += need;
  ++c->live;
  chunk = c;
  return p;
}

void WeightArena::release(Chunk* chunk) {
  if (--chunk->live > 0) return;
  chunks_.erase(std::find(chunks_.begin(), chunks_.end(), chunk));
  std::free(chunk->data);
  delete chunk;
}

}  // namespace specd::cpu
