#include "bandwidth.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "gguf/gguf_reader.hpp"

namespace specd::bench {

uint64_t decode_weight_bytes(const std::string& gguf_path) {
  const GgufFile f = GgufFile::open(gguf_path);
  const bool tied = f.tensor("output.weight") == nullptr;
  // A mixture of experts' 3-D expert tensors: a token reads expert_used_count of expert_count.
  const std::string a = f.get_string_opt("general.architecture").value_or("") + ".";
  const uint64_t experts = f.get_u32_opt(a + "expert_count").value_or(0);
  const uint64_t used = f.get_u32_opt(a + "expert_used_count").value_or(0);
  uint64_t bytes = 0;
  for (const GgufTensor& t : f.tensors()) {
    if (t.n_dims == 2 && (t.name != "token_embd.weight" || tied)) bytes += t.n_bytes;
    if (t.n_dims == 3 && experts > 0 && used <= experts) bytes += t.n_bytes / experts * used;
  }
  return bytes;
}

double copy_bandwidth() {
  const size_t n = size_t{256} << 20;
  std::vector<char> src(n, 1), dst(n, 0);
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    src[r] = dst[n - 1 - r];  // keep the copies observable
  }
  return 2.0 * double(n) / best;
}

namespace {

using Clock = std::chrono::steady_clock;

// XOR of n words (a multiple of 32) in four independent chains of vector loads as wide as the
// CPU's, as the matmul kernels load weights: with 8-byte loads a core's load ports, not the
// memory, can set the pace (at 2 loads a cycle, 48 GB/s at 3 GHz, and less while the clock
// is still ramping up).
template <class V>
[[gnu::always_inline]] inline uint64_t xor_lanes(const uint64_t* p, size_t n) {
  constexpr size_t w = sizeof(V) / 8;
  V a{}, b{}, c{}, d{};
  for (size_t i = 0; i + 4 * w <= n; i += 4 * w) {
    a ^= *reinterpret_cast<const V*>(p + i);
    b ^= *reinterpret_cast<const V*>(p + i + w);
    c ^= *reinterpret_cast<const V*>(p + i + 2 * w);
    d ^= *reinterpret_cast<const V*>(p + i + 3 * w);
  }
  const V x = a ^ b ^ c ^ d;
  uint64_t r = 0;
  for (size_t j = 0; j < w; ++j) r ^= x[j];
  return r;
}

using Lanes8 = uint64_t __attribute__((vector_size(64)));
using Lanes4 = uint64_t __attribute__((vector_size(32)));
using Lanes2 = uint64_t __attribute__((vector_size(16)));

[[gnu::target("avx512f"), gnu::noinline]] uint64_t xor_avx512(const uint64_t* p, size_t n) {
  return xor_lanes<Lanes8>(p, n);
}
[[gnu::target("avx2"), gnu::noinline]] uint64_t xor_avx2(const uint64_t* p, size_t n) {
  return xor_lanes<Lanes4>(p, n);
}
[[gnu::noinline]] uint64_t xor_sse2(const uint64_t* p, size_t n) {
  return xor_lanes<Lanes2>(p, n);
}

uint64_t xor_words(const uint64_t* p, size_t n) {
  static const auto best = __builtin_cpu_supports("avx512f") ? &xor_avx512
                           : __builtin_cpu_supports("avx2")  ? &xor_avx2
                                                             : &xor_sse2;
  return best(p, n);
}

}  // namespace

double read_bandwidth(int threads) {
  threads = std::max(threads, 1);
  const size_t words = (size_t{256} << 20) / 8;
  const size_t slice = words / static_cast<size_t>(threads) / 32 * 32;  // whole vector groups
  // In the pages the CPU device keeps weights in (plugins/cpu/runtime/huge_pages.hpp): 2 MiB ones,
  // unless SPECD_CPU_HUGE_PAGES=0.
  void* memory = nullptr;
  if (posix_memalign(&memory, size_t{2} << 20, words * 8) != 0) throw std::bad_alloc();
  const std::unique_ptr<void, decltype(&std::free)> owner(memory, &std::free);
#ifdef MADV_HUGEPAGE
  const char* huge = std::getenv("SPECD_CPU_HUGE_PAGES");
  if (!huge || std::string(huge) != "0") madvise(memory, words * 8, MADV_HUGEPAGE);
#endif
  auto* buffer = static_cast<uint64_t*>(memory);
  for (size_t i = 0; i < words; ++i) buffer[i] = i * 0x9e3779b97f4a7c15u;  // every page mapped
  std::vector<double> passes;
  uint64_t sink = 0;
  // Passes in the first 0.2 s are not counted: they bring the cores' clocks up from idle (a
  // roof taken from idle read 38 GB/s where the same machine read 64 right after decoding).
  const auto warm_until = Clock::now() + std::chrono::milliseconds(200);
  while (passes.size() < 7) {
    const bool warming = Clock::now() < warm_until;
    std::vector<Clock::time_point> start(static_cast<size_t>(threads)),
        end(static_cast<size_t>(threads));
    std::vector<uint64_t> result(static_cast<size_t>(threads));
    std::atomic<int> ready{0};
    auto read = [&](int t) {  // all threads start together, so their reads overlap
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      const auto i = static_cast<size_t>(t);
      start[i] = Clock::now();
      result[i] = xor_words(buffer + i * slice, slice);
      end[i] = Clock::now();
    };
    std::vector<std::thread> others;
    for (int t = 1; t < threads; ++t) others.emplace_back(read, t);
    read(0);
    for (auto& th : others) th.join();
    const auto first = *std::min_element(start.begin(), start.end());
    const auto last = *std::max_element(end.begin(), end.end());
    if (!warming)
      passes.push_back(double(slice * 8 * static_cast<size_t>(threads)) /
                       std::chrono::duration<double>(last - first).count());
    for (uint64_t x : result) sink ^= x;
  }
  asm volatile("" : : "r"(sink));  // keeps the reads observable
  return *std::max_element(passes.begin(), passes.end());
}

}  // namespace specd::bench
