#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemm/gemm.hpp"

namespace specd::cpu {

bool avx2_available() {
#if defined(__x86_64__)
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                         __builtin_cpu_supports("f16c");
  return ok;
#else
  return false;
#endif
}

bool avx512_available() {
#if defined(__x86_64__)
  static const bool ok = avx2_available() && __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512dq");
  return ok;
#else
  return false;
#endif
}

const char* kernel_name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::kAvx512:
      return "avx512";
    case GemmKernel::kAvx2:
      return "avx2";
    default:
      return "generic";
  }
}

GemmKernel select_kernel() {
  const GemmKernel best = avx512_available() ? GemmKernel::kAvx512
                          : avx2_available() ? GemmKernel::kAvx2
                                             : GemmKernel::kGeneric;
  const char* env = std::getenv("SPECD_CPU_KERNEL");
  if (!env || !*env) return best;
  const std::string want = env;
  if (want == "generic") return GemmKernel::kGeneric;
  if (want == "avx2" && avx2_available()) return GemmKernel::kAvx2;
  if (want == "avx512" && avx512_available()) return GemmKernel::kAvx512;
  throw std::invalid_argument(
      "cpu: SPECD_CPU_KERNEL=" + want +
      " is unknown or not supported by this CPU (best: " + kernel_name(best) + ")");
}

namespace {
constexpr int64_t kSerialMacs = int64_t{1} << 16;
}

void gemm_small(ThreadPool& pool, GemmKernel kernel, const GemmArgs& a) {
  // Tasks are column ranges: a multiple of 8 columns, small enough to balance threads.
  // Which task or thread computes a column never changes its bits.
  const int64_t threads = pool.size();
  int64_t cols = (a.n + threads * 4 - 1) / (threads * 4);
  cols = (cols + 7) / 8 * 8;
  if (cols < 16) cols = 16;
  const int64_t tasks = (a.n + cols - 1) / cols;
  auto task = [&](int64_t t) {
    thread_local std::vector<float> panel;
    // Quantized block types other than q8_0 always decode to the panel; q8_0 when m > 4.
    const bool block_type = a.dtype != SPECD_DTYPE_F32 && a.dtype != SPECD_DTYPE_F16 &&
                            a.dtype != SPECD_DTYPE_BF16 && a.dtype != SPECD_DTYPE_Q8_0;
    const bool use_panel = kernel != GemmKernel::kGeneric && (a.m > 4 || block_type);
    if (use_panel && panel.size() < static_cast<size_t>(8 * a.k))
      panel.resize(static_cast<size_t>(8 * a.k));
    float* p = use_panel ? panel.data() : nullptr;
    const int64_t j0 = t * cols;
    const int64_t j1 = j0 + cols < a.n ? j0 + cols : a.n;
    switch (kernel) {
      case GemmKernel::kAvx512:
        gemm_cols_avx512(a, j0, j1, p);
        break;
      case GemmKernel::kAvx2:
        gemm_cols_avx2(a, j0, j1, p);
        break;
      default:
        gemm_cols_generic(a, j0, j1);
        break;
    }
  };
  if (a.m * a.n * a.k < kSerialMacs) {  // waking threads would cost more than the work
    for (int64_t t = 0; t < tasks; ++t) task(t);
  } else {
    pool.run(tasks, task);
  }
}

}  // namespace specd::cpu
