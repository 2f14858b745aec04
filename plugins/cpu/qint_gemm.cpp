// The integer family's small-m GEMM driver: quantizes the rows of x once (qint.hpp), then runs
// column-range tasks of the chosen kernel. Which task or thread computes a column never
// changes its bits; neither does m.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemm.hpp"
#include "packed_weights.hpp"
#include "qint.hpp"
#include "qint_q4k.hpp"
#include "qint_q6k.hpp"

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

// The column ranges of a product, handed out while it runs. Each thread's task owns one equal,
// contiguous share of the columns (in granules: groups of 16 columns for the interleaved
// kernels) and claims it from the front in halving pieces, so that it streams its weights in
// order and the hardware prefetcher's stream restarts only a few times. A task whose share is
// done takes half of what is left at the back of the share with the most left, and so on, so
// the threads finish together even when one core runs slower (a shared host whose other
// tenants take part of a core, a hybrid CPU) or a worker joins late or never: the caller then
// takes the absent worker's share. Which thread computes a column never changes its bits.
class ColumnShares {
 public:
  // Called by the device thread; the shares live in its storage, which the workers reach
  // through shares_ while the run lasts.
  ColumnShares(int64_t n, int64_t granule, int threads)
      : n_(n), granule_(granule), count_(threads) {
    thread_local std::vector<Share> storage;
    if (static_cast<int>(storage.size()) < threads) storage = std::vector<Share>(threads);
    shares_ = storage.data();
    const int64_t units = (n + granule - 1) / granule;
    for (int t = 0; t < threads; ++t)
      shares_[t].pack(units * t / threads, units * (t + 1) / threads);
  }

  int count() const { return count_; }

  // Calls columns(j0, j1) for every piece that task t claims: its own share's, then stolen ones.
  template <class F>
  void run_task(int t, F&& columns) {
    int64_t first = 0, last = 0;
    while (claim(shares_[t], false, first, last)) columns(first, last);
    for (;;) {
      Share* victim = nullptr;
      int64_t most = 0;
      for (int v = 0; v < count_; ++v) {
        const int64_t left = shares_[v].left();
        if (left > most) most = left, victim = &shares_[v];
      }
      if (!victim) return;
      if (claim(*victim, true, first, last)) columns(first, last);
    }
  }

 private:
  // A share's unclaimed granules [front, back), both in one word so that one CAS claims
  // (products have far fewer than 2^32 granules).
  struct alignas(64) Share {
    std::atomic<uint64_t> word{0};
    void pack(int64_t front, int64_t back) {
      word.store(static_cast<uint64_t>(back) << 32 | static_cast<uint64_t>(front),
                 std::memory_order_relaxed);
    }
    int64_t left() const {
      const uint64_t w = word.load(std::memory_order_relaxed);
      return static_cast<int64_t>(w >> 32) - static_cast<int64_t>(w & 0xffffffffu);
    }
  };

  // Half of what is left (at least kMinUnits granules, at most all of it).
  static int64_t piece(int64_t left) { return std::min(left, std::max(kMinUnits, left / 2)); }

  // Claims the next piece of share s, from its front or its back; false when it is empty.
  bool claim(Share& s, bool from_back, int64_t& first, int64_t& last) const {
    uint64_t w = s.word.load(std::memory_order_relaxed);
    for (;;) {
      int64_t front = static_cast<int64_t>(w & 0xffffffffu), back = static_cast<int64_t>(w >> 32);
      if (front >= back) return false;
      const int64_t take = piece(back - front);
      const int64_t u0 = from_back ? back - take : front, u1 = u0 + take;
      if (from_back)
        back = u0;
      else
        front = u1;
      if (s.word.compare_exchange_weak(
              w, static_cast<uint64_t>(back) << 32 | static_cast<uint64_t>(front),
              std::memory_order_relaxed)) {
        first = std::min(n_, u0 * granule_);
        last = std::min(n_, u1 * granule_);
        return true;
      }
    }
  }

  static constexpr int64_t kMinUnits = 2;
  int64_t n_, granule_;
  int count_;
  Share* shares_;
};

}  // namespace

void gemm_small_int8(ThreadPool& pool, GemmKernel kernel, const GemmArgs& a) {
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
  const bool interleaved = a.dtype == SPECD_DTYPE_Q4_K || a.dtype == SPECD_DTYPE_Q6_K;
  ColumnShares shares(a.n, interleaved ? 16 : 8, pool.size());
  int64_t scratch = qint::scratch_bytes(a.m, a.k);
  if (cols == &qint::cols_avx512 && a.dtype == SPECD_DTYPE_Q4_K)  // its decoded group
    scratch = std::max(scratch, qint::q4k_scratch_bytes(a.m, a.k));
  if (cols == &qint::cols_avx512 && a.dtype == SPECD_DTYPE_Q6_K)
    scratch = std::max(scratch, qint::q6k_scratch_bytes(a.m, a.k));
  auto columns = [&](int64_t j0, int64_t j1) {  // one scratch per thread, serial or not
    thread_local std::vector<uint8_t> buf;
    if (j0 < j1) cols(qa, j0, j1, aligned(buf, scratch));
  };
  if (pool.size() == 1 || a.m * a.n * a.k < (int64_t{1} << 16)) {
    columns(0, a.n);
  } else {
    pool.run(shares.count(), [&](int64_t t) { shares.run_task(static_cast<int>(t), columns); });
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
