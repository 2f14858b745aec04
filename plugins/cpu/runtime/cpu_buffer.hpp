// The CPU backend's buffers and checked views of them.
#pragma once

#include <cstdint>

#include "runtime/huge_pages.hpp"
#include "specd/backend.h"

// Opaque to the host (backend.h); host memory, 64-byte aligned unless wrapped.
struct specd_buffer {
  uint8_t* data = nullptr;
  uint64_t size = 0;
  // true: writable memory from buffer_alloc. false: read-only: host memory wrapped in place,
  // or a weight matrix the device copied into its weight arena (arena_chunk).
  bool owned = false;
  // Not 0: a weight matrix of packed_dtype (q4_K, q6_K or q8_0), rows this many bytes long, kept in
  // the packed layout of packed_weights.hpp (buffer_wrap_weights). `size` is its GGUF size and
  // views mean the GGUF bytes; only matmul (w), get_rows (table), download and copy (source)
  // read it.
  int64_t packed_row_bytes = 0;
  specd_dtype packed_dtype = SPECD_DTYPE_F32;
  // Not null: `data` lies in this chunk of the device's weight arena (packed matrices).
  specd::cpu::WeightArena::Chunk* arena_chunk = nullptr;
  // Not 0: `data` is a mapping of this many bytes (alloc_reserved), released with munmap.
  uint64_t mapped_bytes = 0;
};

namespace specd::cpu {

// A validated view: rows x cols of dtype at p, rows `stride` bytes apart.
struct Mat {
  uint8_t* p = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;  // bytes
  specd_dtype dtype = SPECD_DTYPE_F32;

  float* f32_row(int64_t i) const { return reinterpret_cast<float*>(p + i * stride); }
  int32_t* i32_row(int64_t i) const { return reinterpret_cast<int32_t*>(p + i * stride); }
  uint8_t* row(int64_t i) const { return p + i * stride; }
};

}  // namespace specd::cpu
