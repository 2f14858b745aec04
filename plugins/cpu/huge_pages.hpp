// Host memory on transparent huge pages for the CPU device's large buffers. A decoding step
// streams every weight once: in 4 KiB pages that is a page-table walk, and a restart of the
// hardware prefetcher's stream, every 4 KiB. On a 2-core Zen 4 VM two threads read 56 MiB at
// 28-37 GB/s in 4 KiB pages and 29-41 GB/s in 2 MiB ones (interleaved passes), and the
// constructed 95 M Q4_K_M model decoded 1.12x as fast (median of 8 interleaved pairs;
// ARCHITECTURE.md, "The read roof and huge pages").
//
// Huge pages are asked for with madvise(MADV_HUGEPAGE). Where the kernel's setting
// (/sys/kernel/mm/transparent_hugepage/enabled) is "never", or none is free, the memory stays
// in 4 KiB pages, which costs speed only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace specd::cpu {

constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;

// `size` (> 0) bytes starting on a 2 MiB boundary, asked to lie on huge pages; null when out
// of memory. Released with std::free. Only whole 2 MiB pages inside the block can be huge.
void* alloc_huge_aligned(uint64_t size);

// Packed weight matrices (most smaller than 2 MiB: a 1024 x 2816 q4_K matrix is 1.6 MiB)
// placed one after another in chunks of alloc_huge_aligned memory, so that they lie on huge
// pages without each rounding up to 2 MiB. A chunk is freed when the last matrix in it is;
// what a chunk leaves unused at its end is never touched, so it is not resident.
//
// Thread rules: one owner thread (the device's, as buffer_alloc and buffer_free are).
class WeightArena {
 public:
  struct Chunk;

  WeightArena() = default;
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;
  // Frees the chunks still held (their matrices must no longer be read).
  ~WeightArena();

  // 64-byte aligned room for `size` (> 0) bytes, and the chunk it lies in (for release);
  // null when out of memory.
  uint8_t* allocate(uint64_t size, Chunk*& chunk);
  // Gives back one allocation of `chunk`.
  void release(Chunk* chunk);

  // Chunks held now (for tests).
  size_t chunks() const { return chunks_.size(); }

 private:
  std::vector<Chunk*> chunks_;  // the last one takes new matrices
};

}  // namespace specd::cpu
