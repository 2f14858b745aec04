// GEMM y[m, n] = x[m, k] · w[n, k]ᵀ with f32 activations and f32/f16/bf16/q8_0 weights.
//
// gemm_small (m <= kSmallMaxRows) is batch invariant: output element (i, j) is one fixed
// sequence of lane-wise fused multiply-adds over k followed by a fixed horizontal
// reduction, the same whatever m, the row's place in the batch or the thread running it.
// Each task owns a range of output columns, loads each weight row once and applies it to
// all m rows. gemm_large hands big m (prefill) to oneDNN.
#pragma once

#include <cstdint>

#include "gemm/gemm_kernels.hpp"
#include "runtime/thread_pool.hpp"

namespace specd::cpu {

constexpr int64_t kSmallMaxRows = 64;

void gemm_small(ThreadPool& pool, GemmKernel kernel, const GemmArgs& a);

// The best kernel this CPU runs, unless $SPECD_CPU_KERNEL (generic, avx2, avx512) asks for
// another one it can run; throws for an unknown or unsupported request.
GemmKernel select_kernel();

// The numeric family of the small-m GEMM for quantized weights: kExact decodes weights exactly
// to f32 and keeps f32 activations (gemm_small); kInt8 rounds each activation row to 8-bit
// blocks and uses integer dot products (gemm_small_int8, qint.hpp) for the dtypes it computes.
enum class QuantFamily { kExact, kInt8 };

// kInt8 unless $SPECD_CPU_QUANT (exact, int8) asks otherwise; throws for an unknown value.
QuantFamily select_quant();
const char* quant_name(QuantFamily family);
// True for the weight dtypes gemm_small_int8 computes (the others take gemm_small).
bool int8_computes(specd_dtype dtype);
bool avx512_vnni_available();
void gemm_small_int8(ThreadPool& pool, GemmKernel kernel, const GemmArgs& a);
// gemm_small_int8 for any m: rows in chunks of kSmallMaxRows, each row's bits those of the
// same row in a batch of one.
void gemm_int8(ThreadPool& pool, GemmKernel kernel, const GemmArgs& a);

// oneDNN path for large m. `scratch` is reused between calls.
class LargeGemm {
 public:
  LargeGemm();
  ~LargeGemm();
  LargeGemm(const LargeGemm&) = delete;
  LargeGemm& operator=(const LargeGemm&) = delete;
  void run(ThreadPool& pool, const GemmArgs& a);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace specd::cpu
