// Attention of one row's query heads with AVX2 (called only after avx2_available(), when the
// device's kernel is avx2): the bits of ops.cpp's attend_head for each head, reading the cache
// rows in their own encoding (f32, f16 or q8_0), decoded exactly as kv_rows.hpp does, in
// registers instead of through a decoded copy of the rows.
//
// Thread rule: a pure function of its arguments; `scores` is the caller's scratch.
#pragma once

#include <cstdint>

#include "specd/backend.h"

namespace specd::cpu {

// True when attend_heads_avx2 computes this head_dim (64, 80, 96, 128 and 256).
bool attend_avx2_supports(int64_t head_dim);

// np (1, or 2 when head_dim is 64) consecutive query heads q (np * head_dim floats) that share
// one KV head: krow[j], vrow[j] point at key j's slice of that KV head in its cache row (dtype
// f32, f16 or q8_0; a q8_0 slice starts on a block); sink: the np heads' sinks, or null
// (attention_sinks.hpp); scores: np * n_keys floats; o: np * head_dim floats.
void attend_heads_avx2(int64_t head_dim, int np, specd_dtype dtype, const float* q,
                       const uint8_t* const* krow, const uint8_t* const* vrow, int64_t n_keys,
                       float scale, const float* sink, float* scores, float* o);

// Up to 8 lanes (lanes >= 1), each a (row, query head) pair of one KV head attending keys
// [first[r], end[r]) of one run of cache rows: krow[j], vrow[j] point at key j's slice of that KV
// head (dtype f32, f16 or q8_0, as above) for j below the largest end; q[r] is lane r's query
// (head_dim floats), o[r] its output; sinks: each lane's sink, or null. Each lane gets the bits
// of attend_heads_avx2 over its keys, each key row being read once for all the lanes. qt: 8 *
// head_dim floats, sc: 8 per key, both the caller's 32-byte aligned scratch.
void attend_lanes_avx2(int64_t head_dim, specd_dtype dtype, const float* const* q, float* const* o,
                       const int32_t* first, const int32_t* end, int lanes,
                       const uint8_t* const* krow, const uint8_t* const* vrow, float scale,
                       const float* sinks, float* qt, float* sc);

}  // namespace specd::cpu
