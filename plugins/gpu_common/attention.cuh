// Attention of m query rows over the KV cache with the compact causal+tree mask and GQA.
//
// One block per (query head, query row). Keys are visited in logical order (prefix rows, then
// the row's extra slots) in tiles of kTile; a tile's scores are fixed-order warp dot products,
// then a running-max softmax folds the tile into the output accumulators key by key. Tile
// boundaries are positions in the logical key sequence, so a row's result depends only on
// that sequence (not on m, other rows, or how the sequence is split into prefix and extras).
// With a sliding window (ABI 0.8) the row attends the last `window` keys of its sequence and
// the tiles start at the first of them, so the result depends only on the keys in the window.
// A head's sink is folded in after the last tile, as one more term of the running softmax
// whose value row is zero.
//
// The mask lives in device memory; each block validates its own row (the CPU backend's rules,
// numeric.hpp) and, if invalid, writes NaN, raises the device error flag (reported by the next
// synchronize/download) and reads nothing out of range. Paged (attention_paged): a row's
// logical key rows are found through its block table; the row's table range and every block
// id it reads are validated the same way.
#include <math.h>

#include "launch.hpp"
#include "numeric.hpp"

namespace specd::gpu {
namespace {

constexpr int kAttnThreads = 128;
constexpr int kAttnWarps = kAttnThreads / kLanes;
constexpr int kTile = 32;
constexpr int kDimsPerThread = kMaxHeadDim / kAttnThreads;

__global__ void attention_kernel(AttentionArgs a) {
  SPECD_DYNAMIC_SHARED(float, q_s);  // head_dim floats
  __shared__ float score_s[kTile];
  __shared__ int64_t slot_s[kTile];
  __shared__ int ok_s;
  const int h = static_cast<int>(blockIdx.x);
  const int64_t i = blockIdx.y;
  const int t = static_cast<int>(threadIdx.x);
  const int lane = t % kLanes, warp = t / kLanes;
  const int hd = a.head_dim;

  MaskRow row;
  row.prefix = a.prefix[i];
  row.begin = a.begin[i];
  row.end = a.begin[i + 1];
  if (t == 0) {
    bool ok = true;
    int64_t limit = a.capacity;
    if (a.table) {
      const int64_t tb = a.table_begin[i];
      ok = tb >= 0 && tb <= a.n_table;
      limit = ok ? (a.n_table - tb) * a.block_rows : 0;
    }
    ok = ok && mask_row_ok(row, i, a.extra, a.n_extra_cols, limit);
    if (ok && a.table) {  // the blocks the row reads: up to its last key's
      const int32_t* tab = a.table + a.table_begin[i];
      const int64_t last = key_slot(row, a.extra, key_count(row) - 1);
      for (int64_t b = 0; b <= last / a.block_rows && ok; ++b)
        ok = tab[b] >= 0 && (tab[b] + 1) * a.block_rows <= a.capacity;
    }
    ok_s = ok ? 1 : 0;
    if (!ok_s) atomicExch(a.error, 1);
  }
  const float* qi = a.q + i * a.ldq + static_cast<int64_t>(h) * hd;
  for (int d = t; d < hd; d += kAttnThreads) q_s[d] = qi[d];
  __syncthreads();
  float* oi = a.out + i * a.ldo + static_cast<int64_t>(h) * hd;
  if (!ok_s) {
    for (int d = t; d < hd; d += kAttnThreads) oi[d] = NAN;
    return;  // uniform across the block
  }

  const int32_t* table = a.table ? a.table + a.table_begin[i] : nullptr;  // paged
  const int64_t kv_off = static_cast<int64_t>(h / (a.n_head / a.n_head_kv)) * hd;
  const int64_t kv_off_bytes = kv_byte_offset(a.kv_dtype, kv_off);
  const int64_t n_keys = key_count(row);
  float acc[kDimsPerThread];
#pragma unroll
  for (int r = 0; r < kDimsPerThread; ++r) acc[r] = 0.0f;
  float run_max = -INFINITY, run_sum = 0.0f;

  for (int64_t t0 = window_first(n_keys, a.window); t0 < n_keys; t0 += kTile) {
    const int tn = n_keys - t0 < kTile ? static_cast<int>(n_keys - t0) : kTile;
    for (int jj = warp; jj < tn; jj += kAttnWarps) {  // one key per warp
      const int64_t logical = key_slot(row, a.extra, t0 + jj);
      const int64_t slot =
          table ? table[logical / a.block_rows] * a.block_rows + logical % a.block_rows : logical;
      const uint8_t* kr = a.k + slot * a.ldk + kv_off_bytes;
      float s = 0.0f;
      for (int d = lane; d < hd; d += kLanes) s = fmaf(q_s[d], kv_value(kr, a.kv_dtype, d), s);
      s = warp_sum(s);
      if (lane == 0) {
        score_s[jj] = s * a.scale;
        slot_s[jj] = slot;
      }
    }
    __syncthreads();
    // Every thread runs the same scalar sequence, so all agree on max and sum bit for bit.
    float tile_max = score_s[0];
    for (int jj = 1; jj < tn; ++jj) tile_max = fmaxf(tile_max, score_s[jj]);
    const float new_max = fmaxf(run_max, tile_max);
    const float c = expf(run_max - new_max);  // 0 on the first tile
    run_sum *= c;
#pragma unroll
    for (int r = 0; r < kDimsPerThread; ++r) acc[r] *= c;
    for (int jj = 0; jj < tn; ++jj) {
      const float p = expf(score_s[jj] - new_max);
      run_sum += p;
      const uint8_t* vr = a.v + slot_s[jj] * a.ldv + kv_off_bytes;
#pragma unroll
      for (int r = 0; r < kDimsPerThread; ++r) {
        const int d = t + r * kAttnThreads;
        if (d < hd) acc[r] = fmaf(p, kv_value(vr, a.kv_dtype, d), acc[r]);
      }
    }
    run_max = new_max;
    __syncthreads();  // score_s / slot_s are rewritten by the next tile
  }
  if (a.sinks) {  // e^(sink - max) joins the denominator; the accumulators rescale as for a tile
    const float sink = a.sinks[h];
    const float new_max = fmaxf(run_max, sink);
    const float c = expf(run_max - new_max);
    run_sum = run_sum * c + expf(sink - new_max);
#pragma unroll
    for (int r = 0; r < kDimsPerThread; ++r) acc[r] *= c;
  }
#pragma unroll
  for (int r = 0; r < kDimsPerThread; ++r) {
    const int d = t + r * kAttnThreads;
    if (d < hd) oi[d] = acc[r] / run_sum;
  }
}

}  // namespace

cudaError_t launch_attention(const AttentionArgs& a, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(a.n_head), static_cast<unsigned>(a.m));
  const size_t smem = static_cast<size_t>(a.head_dim) * sizeof(float);
  SPECD_LAUNCH(grid, kAttnThreads, smem, stream, attention_kernel)(a);
  return cudaGetLastError();
}

}  // namespace specd::gpu
