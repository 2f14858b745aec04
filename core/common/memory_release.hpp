// Returning freed heap memory to the system. glibc keeps what a thread's arena freed for that
// arena's next allocations, so a burst of large requests (grammars, JSON schemas, megabyte
// bodies) would leave the process at its peak resident size for good. After such work is
// freed, release_freed_memory() has a background thread call malloc_trim(0) once things are
// quiet (100 ms after the last call, or 1 s after the first of a steady stream), so the
// threads that serve requests never pay for the trim.
//
// Thread rules: may be called from any thread; never blocks. The background thread starts at
// the first call and is joined at exit.
#pragma once

#include <cstdint>

namespace specd {

void release_freed_memory();

// For a long-running server: a heap's free top is given back once it passes 4 MiB (glibc's
// M_TRIM_THRESHOLD, which otherwise grows with the largest block freed, up to 64 MiB, per
// thread arena, so that each arena could keep tens of MiB), and blocks of 4 MiB or more are
// mapped and unmapped on their own. Left as glibc has it when MALLOC_TRIM_THRESHOLD_ or
// MALLOC_MMAP_THRESHOLD_ is set in the environment. Call once, early.
void trim_heap_eagerly();

// Trims done so far (for tests).
uint64_t memory_releases();

}  // namespace specd
