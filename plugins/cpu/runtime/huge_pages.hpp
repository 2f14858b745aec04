// Host memory on transparent huge pages for the CPU device's weights and large buffers. A
// decoding step streams every weight once: in 4 KiB pages that is a page-table walk, and a
// restart of the hardware prefetcher's stream, every 4 KiB. On a 2-core Zen 4 VM two threads
// read 56 MiB at 28-37 GB/s in 4 KiB pages and 29-41 GB/s in 2 MiB ones (interleaved passes).
// Decoding the constructed 95 M model there (medians of interleaved pairs' ratios): Q8_0, copied
// to huge pages against wrapped in the file's mapping, 1.12x as fast; Q4_K_M against its packed
// matrices in 4 KiB pages 1.03x, and against the release before the arena 1.12x
// (ARCHITECTURE.md, "The read roof and huge pages").
//
// Huge pages are asked for with madvise(MADV_HUGEPAGE). Where the kernel has none free, the
// memory stays in 4 KiB pages, which costs speed only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace specd::cpu {

constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;

// Whether the device asks for huge pages: not when SPECD_CPU_HUGE_PAGES is "0", nor when
// /sys/kernel/mm/transparent_hugepage/enabled reads "[never]" or cannot be read. Throws
// std::invalid_argument for a value of the variable other than "0" and "1".
bool huge_pages_wanted();

// `size` (> 0) bytes starting on a 2 MiB boundary, asked (when `advise`) to lie on huge pages;
// null when out of memory. Released with std::free. Only whole 2 MiB pages inside the block can
// be huge.
void* alloc_huge_aligned(uint64_t size, bool advise);

// `size` (> 0) bytes of address space starting on a 2 MiB boundary, mapped without reserving
// memory for it (MAP_NORESERVE): pages are backed, zero-filled, as they are first written, so a
// buffer sized for the worst case (a server's whole KV budget) costs what is used of it. Asked
// (when `advise`) to lie on huge pages. Null when the mapping fails. Released with
// free_reserved(p, size).
void* alloc_reserved(uint64_t size, bool advise);
void free_reserved(void* p, uint64_t size);

// Weight matrices (most smaller than 2 MiB: a 1024 x 2816 q4_K matrix is 1.6 MiB) placed one
// after another in chunks of alloc_huge_aligned memory, so that they lie on huge pages without
// each rounding up to 2 MiB. A chunk is freed when the last matrix in it is; what a chunk leaves
// unused at its end is never touched, so it is not resident.
//
// Thread rules: one owner thread (the device's, as buffer_alloc and buffer_free are).
class WeightArena {
 public:
  struct Chunk;

  explicit WeightArena(bool advise = true) : advise_(advise) {}
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
  bool advise_;
  std::vector<Chunk*> chunks_;  // the last one takes new matrices
};

}  // namespace specd::cpu
