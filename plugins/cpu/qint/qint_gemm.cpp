// The integer family's small-m GEMM driver: quantizes the rows of x once (qint.hpp), then runs
// column-range tasks of the chosen kernel. Which task or thread computes a column never
// changes its bits; neither does m.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemm/gemm.hpp"
#include "qint/packed_weights.hpp"
#include "qint/qint.hpp"
#include "qint/qint_q4k.hpp"
#include "qint/qint_q6k.hpp"
#include "qint/qint_q8_0.hpp"
#include "runtime/work_shares.hpp"
#include "specd/cpp/backend.hpp"

namespace specd::cpu {

bool avx512_vnni_available() {
#if defined(__x86_64__)
  static const bool ok = avx512_available() && __builtin_cpu_supports("avx512vnni");
  return ok;
#else
  return false;
#endif
}

const char* quant_name(QuantFamily family) {
  return family == QuantFamily::kInt8 ? "int8" : "exact";
}

QuantFamily select_quant() {
  const char* env = std::getenv("SPECD_CPU_QUANT");
  if (!env || !*env) return QuantFamily::kInt8;
  const std::string want = env;
  if (want == "int8") return QuantFamily::kInt8;
  if (want == "exact") return QuantFamily::kExact;
  throw std::invalid_argument("cpu: SPECD_CPU_QUANT=" + want +
                              " is unknown (exact: f32 activations over exactly decoded weights; "
                              "int8: 8-bit activation blocks and integer dot products)");
}

bool int8_computes(specd_dtype dtype) {
  return qint::supports(dtype);
}

namespace qint {

void unreachable_dtype(specd_dtype dt, const char* kernel) {
  std::fprintf(stderr, "specd: cpu: internal error: %s reached with dtype %s\n", kernel,
               sdk::dtype_name(dt));
  std::abort();
}

}  // namespace qint

namespace {

// Grows `v` to hold `bytes` bytes plus padding and returns a 64-byte aligned pointer into it.
uint8_t* aligned(std::vector<uint8_t>& v, int64_t bytes) {
  const size_t need = static_cast<size_t>(bytes) + 64 + 256;
  if (v.size() < need) v.resize(need);
  const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
  return v.data() + ((64 - p % 64) % 64);
}

struct ActBuffers {
  std::vector<uint8_t> q, d, bsum16, sum4;
};

}  // namespace

void gemm_small_int8(ThreadPool& pool, GemmKernel kernel, const GemmArgs& a) {
  if (!qint::supports(a.dtype))
    throw std::invalid_argument(std::string("cpu: the int8 kernels have no dot product for ") +
                                sdk::dtype_name(a.dtype) + " weights");
  thread_local ActBuffers act;
  const bool kb = qint::k_blocks(a.dtype);
  const int64_t mk = a.m * a.k;
  int8_t* q = reinterpret_cast<int8_t*>(aligned(act.q, mk));
  float* d = reinterpret_cast<float*>(aligned(act.d, mk / 32 * 4));
  int16_t* bsum16 = reinterpret_cast<int16_t*>(aligned(act.bsum16, kb ? mk / 16 * 2 : 0));
  int32_t* sum4 = reinterpret_cast<int32_t*>(aligned(act.sum4, kb ? 0 : mk / 4 * 4));
  auto* cols = &qint::cols_generic;
  auto* quantize = &qint::quantize_rows;
  if (kernel == GemmKernel::kAvx512 && avx512_vnni_available()) {
    cols = &qint::cols_avx512;
    quantize = &qint::quantize_rows_avx512;
  } else if (kernel != GemmKernel::kGeneric) {
    cols = &qint::cols_avx2;
  }
  if (a.packed && (cols != &qint::cols_avx512 || !packed_weights::packs(a.dtype)))
    throw std::logic_error("cpu: packed weights reach a kernel that cannot read them");
  quantize(a.x, a.ldx, a.m, a.k, kb, q, d, bsum16, sum4);
  const qint::QArgs qa{
      {q, d, bsum16, sum4}, a.w, a.y, a.m, a.n, a.k, a.ldw, a.ldy, a.dtype, a.packed};
  int64_t scratch = qint::scratch_bytes(a.m, a.k);
  if (cols == &qint::cols_avx512 && a.dtype == SPECD_DTYPE_Q4_K)  // its decoded group
    scratch = std::max(scratch, qint::q4k_scratch_bytes(a.m, a.k));
  if (cols == &qint::cols_avx512 && a.dtype == SPECD_DTYPE_Q6_K)
    scratch = std::max(scratch, qint::q6k_scratch_bytes(a.m, a.k));
  if (cols == &qint::cols_avx512 && a.dtype == SPECD_DTYPE_Q8_0)
    scratch = std::max(scratch, qint::q8_0_scratch_bytes(a.m, a.k));
  auto columns = [&](int64_t j0, int64_t j1) {  // one scratch per thread, serial or not
    thread_local std::vector<uint8_t> buf;
    if (j0 < j1) cols(qa, j0, j1, aligned(buf, scratch));
  };
  if (pool.size() == 1 || a.m * a.n * a.k < (int64_t{1} << 16)) {
    columns(0, a.n);
  } else {
    // Columns go out in granules (the interleaved kernels' groups of 16), at least two a piece.
    const int64_t granule = packed_weights::packs(a.dtype) ? packed_weights::kGroup : 8;
    run_shared(pool, (a.n + granule - 1) / granule, 2, [&](int64_t u0, int64_t u1) {
      columns(std::min(a.n, u0 * granule), std::min(a.n, u1 * granule));
    });
  }
}

void gemm_int8(ThreadPool& pool, GemmKernel kernel, const GemmArgs& a) {
  for (int64_t r0 = 0; r0 < a.m; r0 += kSmallMaxRows) {
    GemmArgs chunk = a;
    chunk.x = a.x + r0 * a.ldx;
    chunk.y = a.y + r0 * a.ldy;
    chunk.m = std::min(kSmallMaxRows, a.m - r0);
    gemm_small_int8(pool, kernel, chunk);
  }
}

}  // namespace specd::cpu
