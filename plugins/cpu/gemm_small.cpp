#include "gemm.hpp"

namespace specd::cpu {

bool avx512_available() {
#if defined(__x86_64__)
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("f16c") &&
                         __builtin_cpu_supports("fma");
  return ok;
#else
  return false;
#endif
}

void gemm_small(ThreadPool& pool, const GemmArgs& a) {
  // Tasks are column ranges: a multiple of 8 columns, small enough to balance threads.
  const int64_t threads = pool.size();
  int64_t cols = (a.n + threads * 4 - 1) / (threads * 4);
  cols = (cols + 7) / 8 * 8;
  if (cols < 16) cols = 16;
  const int64_t tasks = (a.n + cols - 1) / cols;
  const bool fast = avx512_available();
  pool.run(tasks, [&](int64_t t) {
    const int64_t j0 = t * cols;
    const int64_t j1 = j0 + cols < a.n ? j0 + cols : a.n;
    if (fast) {
      gemm_cols_avx512(a, j0, j1);
    } else {
      gemm_cols_generic(a, j0, j1);
    }
  });
}

}  // namespace specd::cpu
