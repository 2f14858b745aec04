#include "huge_pages.hpp"

#include <sys/mman.h>

#include <algorithm>
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
