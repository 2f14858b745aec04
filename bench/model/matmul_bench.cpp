// specd-matmul-bench: the time of one small-m matmul (y[m, n] = x[m, k] · w[n, k]ᵀ) through a
// backend's device ABI, for a weight type and a list of m, as the kernels of a forward see
// it (activation quantization included). Prints the median of repeats in µs, the cost per
// row and 256 values, and t(m) / t(1): the per-matmul part of specd-model-bench's v(m).
// Past the first m it also prints the multiply-adds per second of the extra rows (their n * k
// each over the extra time) and, for a quantized type on the CPU backend's integer family,
// that rate as a share of the measured int8 roof (int8_roof.hpp) times the threads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "common/error.hpp"
#include "int8_roof.hpp"
#include "median.hpp"
#include "plugin/registry.hpp"
#include "writers/quant_writer.hpp"

using namespace specd;

namespace {

using bench::median;

struct Args {
  std::string backend = "cpu", type = "q4_K";
  int64_t k = 1024, n = 2048;
  std::vector<int64_t> ms{1, 2, 4, 8, 16};
  uint32_t threads = 1;
  int repeats = 21;
};

int usage() {
  std::cerr << "usage: specd-matmul-bench [--type T] [--k K] [--n N] [--m M1,M2,..] "
               "[--threads N] [--repeats R] [--backend ID]\n"
               "  T: a weight type the GGUF tooling writes (f32, f16, bf16, q4_0 .. q6_K, "
               "iq4_nl, iq4_xs); default q4_K, k 1024, n 2048, m 1,2,4,8,16, 1 thread\n";
  return 2;
}

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    const int64_t v = std::stoll(item);
    if (v < 1) throw UsageError("--m values must be >= 1, got " + item);
    out.push_back(v);
  }
  if (out.empty()) throw UsageError("--m needs at least one value");
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(s + " needs a value");
      return argv[++i];
    };
    if (s == "--type")
      a.type = value();
    else if (s == "--k")
      a.k = std::stoll(value());
    else if (s == "--n")
      a.n = std::stoll(value());
    else if (s == "--m")
      a.ms = parse_list(value());
    else if (s == "--threads")
      a.threads = static_cast<uint32_t>(std::stoul(value()));
    else if (s == "--repeats")
      a.repeats = std::max(1, std::stoi(value()));
    else if (s == "--backend")
      a.backend = value();
    else
      throw UsageError("unknown option " + s);
  }
  if (a.k < 256 || a.k % 256 != 0) throw UsageError("--k must be a positive multiple of 256");
  if (a.n < 1) throw UsageError("--n must be >= 1");
  return a;
}

GgmlType type_named(const std::string& name) {
  for (uint32_t t = 0; t < 64; ++t) {
    const auto type = static_cast<GgmlType>(t);
    if (ggml_writable(type) && name == ggml_type_name(type)) return type;
  }
  throw UsageError("--type " + name + " is not a type the GGUF tooling writes");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    const GgmlType type = type_named(a.type);
    const auto dtype = static_cast<specd_dtype>(type);
    PluginRegistry registry;
    Backend backend(registry.require(a.backend, SPECD_KIND_BACKEND));
    DeviceOptions opt;
    opt.threads = a.threads;
    auto dev = backend.open(opt);

    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t max_m = *std::max_element(a.ms.begin(), a.ms.end());
    std::vector<float> wf(static_cast<size_t>(a.n * a.k)), xf(static_cast<size_t>(max_m * a.k));
    for (float& v : wf) v = normal(rng) * 0.03f;
    for (float& v : xf) v = normal(rng);
    const uint64_t row_bytes = dtype_row_bytes(dtype, a.k);
    std::vector<uint8_t> wq(row_bytes * a.n);
    for (int64_t r = 0; r < a.n; ++r)
      quantize_values(type, wf.data() + r * a.k, wq.data() + r * row_bytes, a.k);

    // Handed over as a model's weights are (the backend may keep its own layout); wq outlives
    // the buffer in case the backend refers to it.
    bool copied = false;
    Buffer bw = dev->wrap_weights(wq.data(), wq.size(), dtype, a.n, a.k, copied);
    Buffer bx = dev->alloc(xf.size() * 4), by = dev->alloc(static_cast<uint64_t>(max_m * a.n) * 4);
    bx.upload(xf.data(), xf.size() * 4);
    std::vector<float> y(static_cast<size_t>(max_m * a.n));
    const View w = bw.view(dtype, a.n, a.k);

    const specd_device_info info = dev->info();
    std::printf("device    %s\n", info.name);
    std::printf("matmul    %s weights [%lld x %lld] (%.2f MB), median of %d repeats\n",
                a.type.c_str(), static_cast<long long>(a.n), static_cast<long long>(a.k),
                wq.size() / 1e6, a.repeats);
    // The CPU device's name ends with the family it chose for quantized weights
    // (plugins/cpu/README.md), e.g. "cpu (2 threads, avx512, int8)".
    const std::string device_name = info.name;
    const bool int8_family = a.backend == "cpu" && type != GgmlType::kF32 &&
                             type != GgmlType::kF16 && type != GgmlType::kBF16 &&
                             device_name.ends_with(", int8)");
    const double roof = int8_family ? bench::int8_mac_roof() * info.threads : 0;
    if (int8_family && roof > 0)
      std::printf("int8 roof %.0f GMAC/s (512-bit vpdpbusd measured, %u thread%s)\n", roof / 1e9,
                  info.threads, info.threads == 1 ? "" : "s");
    else if (int8_family)
      std::printf("int8 roof none (no AVX-512 VNNI)\n");
    std::printf("   m   time_us   ns/(row*256)   t(m)/t(1st m)   extra rows GMAC/s%s\n",
                roof > 0 ? "   of roof" : "");
    double first = 0;
    int64_t first_m = 0;
    for (int64_t m : a.ms) {
      const View x = bx.view(SPECD_DTYPE_F32, m, a.k), out = by.view(SPECD_DTYPE_F32, m, a.n);
      dev->matmul(x, w, out);  // warm-up
      by.download(y.data(), static_cast<uint64_t>(m * a.n) * 4);
      std::vector<double> reps;
      for (int r = 0; r < a.repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        dev->matmul(x, w, out);
        dev->synchronize();
        reps.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      const double t = median(reps);
      if (first == 0) {
        first = t;
        first_m = m;
      }
      std::printf("%4lld %9.1f %14.3f %15.2f", static_cast<long long>(m), t * 1e6,
                  t * 1e9 / (double(m) * a.n * (a.k / 256)), t / first);
      if (m > first_m && t > first) {  // noise can make a larger m time less
        const double rate = double(m - first_m) * a.n * a.k / (t - first);
        std::printf(" %19.1f", rate / 1e9);
        if (roof > 0) std::printf(" %9.0f%%", 100 * rate / roof);
      }
      std::printf("\n");
    }
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "specd-matmul-bench: " << e.what() << "\n";
    return usage();
  } catch (const std::exception& e) {
    std::cerr << "specd-matmul-bench: " << e.what() << "\n";
    return 1;
  }
}
