// specd-model-bench: decode and prefill speed of a model GGUF on a backend, and the
// verification cost curve v(m) = time(forward of m tokens) / time(forward of 1 token).
//
//   specd-model-bench MODEL.gguf [--backend cpu] [--threads N] [--repeats R] [--json]
//                     [--cpu-time]   (process CPU time instead of wall time)
//                     [--prefix N]   (committed tokens before the timings; default 64)
//                     [--kv-type T]  (the KV cache type: f32, f16, q8_0; default f32)
//                     [--prefill N]  (tokens of the prefill timing; default 128, as pp128)
//                     [--sequences S] (with --only-m: S sequences of M rows each in one
//                                     batched pass, each after its own prefix: a server step)
//   specd-model-bench --write-random OUT.gguf [--seed S]   (a ~5 M-parameter f16 model)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "bandwidth.hpp"
#include "common/error.hpp"
#include "int8_roof.hpp"
#include "median.hpp"
#include "models/kv_layout.hpp"
#include "models/llama_model.hpp"
#include "plugin/registry.hpp"
#include "writers/gguf_writer.hpp"
#include "writers/llama_writer.hpp"

using namespace specd;

namespace {

using bench::median;

using Clock = std::chrono::steady_clock;

// "a, b" for the figures of v divided by `scale`, with `digits` decimals ("none" when empty).
std::string joined(const std::vector<double>& v, double scale, int digits) {
  if (v.empty()) return "none";
  std::string out;
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.*f", i ? ", " : "", digits, v[i] / scale);
    out += buf;
  }
  return out;
}

// Wall time, or with --cpu-time the CPU time of the whole process (all threads, spinning
// included): steadier on a machine shared with other jobs.
bool g_cpu_time = false;

double now_seconds() {
  if (g_cpu_time) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  }
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// A llama model with random weights: vocab 4096, d 256, 4 layers, FFN 768, 8 heads (4 KV).
void write_random(const std::string& path, uint32_t seed) {
  LlamaLayout layout;
  layout.name = "random-5m";
  layout.n_ctx = 512;
  layout.n_embd = 256;
  layout.n_layer = 4;
  layout.n_ff = 768;
  layout.n_head = 8;
  layout.n_head_kv = 4;
  layout.vocab = 4096;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  GgufWriter w;
  set_llama_metadata(w, layout);
  for (const LlamaTensor& t : llama_tensors(layout)) {
    const bool norm = t.role == LlamaTensorRole::kNorm;
    // Norms are ones; matrices ~ 1/sqrt(inputs), the embedding unit Gaussian.
    const float scale = norm                                    ? 0.0f
                        : t.role == LlamaTensorRole::kEmbedding ? 1.0f
                                                                : 1.0f / std::sqrt(float(t.ne[0]));
    std::vector<float> v(static_cast<size_t>(t.ne[0] * (t.ne.size() > 1 ? t.ne[1] : 1)));
    for (float& x : v) x = (norm ? 1.0f : 0.0f) + scale * nd(rng);
    w.add_tensor_f32(t.name, norm ? GgmlType::kF32 : GgmlType::kF16, t.ne, v.data());
  }
  w.write(path);
}

int usage() {
  std::cerr << "usage: specd-model-bench MODEL.gguf [--backend ID] [--threads N] [--repeats R] "
               "[--json] [--cpu-time] [--decode-only] [--only-m M [--sequences S]] [--prefix N] "
               "[--kv-type f32|f16|q8_0] [--prefill N]\n"
               "       specd-model-bench --write-random OUT.gguf [--seed S]\n";
  return 2;
}

struct Args {
  std::string model, backend = "cpu", write_random;
  uint32_t threads = 0, seed = 1;
  int repeats = 5;
  bool json = false;
  bool decode_only = false;  // time m = 1 decoding only (for profiling the decode loop)
  int32_t only_m = 0;        // time forwards of this many tokens only (for profiling v(m))
  int32_t sequences = 1;     // with only_m: that many sequences of only_m rows in one pass
  int32_t prefix = 0;  // committed tokens before decoding and each v(m) forward; 0: the default
  std::string kv_type = "f32";  // the KV cache's type: f32, f16, q8_0
  int32_t prefill = 0;          // tokens of the prefill timing; 0: the default
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(s + " needs a value");
      return argv[++i];
    };
    if (s == "--threads")
      a.threads = static_cast<uint32_t>(std::stoul(value()));
    else if (s == "--repeats")
      a.repeats = std::max(1, std::stoi(value()));
    else if (s == "--backend")
      a.backend = value();
    else if (s == "--json")
      a.json = true;
    else if (s == "--decode-only")
      a.decode_only = true;
    else if (s == "--only-m")
      a.only_m = std::max(1, std::stoi(value()));
    else if (s == "--sequences")
      a.sequences = std::max(1, std::stoi(value()));
    else if (s == "--prefix")
      a.prefix = std::max(1, std::stoi(value()));
    else if (s == "--kv-type")
      a.kv_type = value();
    else if (s == "--prefill")
      a.prefill = std::max(1, std::stoi(value()));
    else if (s == "--cpu-time")
      g_cpu_time = true;
    else if (s == "--write-random")
      a.write_random = value();
    else if (s == "--seed")
      a.seed = static_cast<uint32_t>(std::stoul(value()));
    else if (!s.empty() && s[0] == '-')
      throw UsageError("unknown option " + s);
    else
      a.model = s;
  }
  if (a.model.empty() && a.write_random.empty()) throw UsageError("no model given");
  if (a.sequences > 1 && !a.only_m) throw UsageError("--sequences needs --only-m");
  return a;
}

struct Bench {
  LlamaModel& model;
  std::vector<float> logits;
  std::mt19937 rng{42};

  std::vector<int32_t> tokens(int32_t n) {
    std::uniform_int_distribution<int32_t> u(0, model.info().vocab_size - 1);
    std::vector<int32_t> t(n);
    for (int32_t& x : t) x = u(rng);
    return t;
  }
  // Time of one forward of an m-token chain after `prefix` committed tokens (not committed).
  double forward_time(KvCache& cache, int32_t m) {
    const auto t = tokens(m);
    std::vector<int32_t> pos(m), par(m);
    for (int32_t i = 0; i < m; ++i) {
      pos[i] = cache.size() + i;
      par[i] = i - 1;
    }
    logits.resize(static_cast<size_t>(m) * model.info().vocab_size);
    const int64_t experts_before = model.experts_run();
    const double t0 = now_seconds();
    model.forward(cache, t, pos, par, logits.data());
    const double seconds = now_seconds() - t0;
    ExpertCount& e = experts[m];
    e.run += model.experts_run() - experts_before;
    ++e.passes;
    return seconds;
  }
  // A mixture of experts: per row count, the experts its forwards ran (over every layer).
  struct ExpertCount {
    int64_t run = 0, passes = 0;
  };
  std::map<int32_t, ExpertCount> experts = {};
  // The mean number of experts a forward of m rows ran in each layer.
  double experts_per_layer(int32_t m) const {
    const auto it = experts.find(m);
    if (it == experts.end() || it->second.passes == 0) return 0;
    return double(it->second.run) / double(it->second.passes) / model.info().n_layer;
  }
  // Runs and commits `n` tokens from an empty cache (the prefix every timing starts after).
  void fill_prefix(KvCache& cache, int32_t n) {
    model.truncate(cache, 0);
    forward_time(cache, n);
    std::vector<int32_t> all(n);
    for (int32_t i = 0; i < n; ++i) all[i] = i;
    model.commit(cache, all);
  }
  // Mean time of forwards of m tokens (never committed): at least 3 of them and at least
  // `min_seconds`.
  double forward_mean(KvCache& cache, int32_t m, double min_seconds) {
    double total = 0;
    int iters = 0;
    while (iters < 3 || total < min_seconds) {
      total += forward_time(cache, m);
      ++iters;
    }
    return total / iters;
  }
  // Time of one batched pass: m rows of each cache's sequence, after its committed prefix.
  double batch_time(std::vector<std::unique_ptr<KvCache>>& caches, int32_t m) {
    std::vector<std::vector<int32_t>> t(caches.size()), pos(caches.size()), par(caches.size());
    std::vector<ForwardEntry> entries(caches.size());
    logits.resize(caches.size() * static_cast<size_t>(m) * model.info().vocab_size);
    for (size_t e = 0; e < caches.size(); ++e) {
      t[e] = tokens(m);
      for (int32_t i = 0; i < m; ++i) {
        pos[e].push_back(caches[e]->size() + i);
        par[e].push_back(i - 1);
      }
      entries[e] = {caches[e].get(), t[e], pos[e], par[e],
                    logits.data() + e * static_cast<size_t>(m) * model.info().vocab_size};
    }
    const double t0 = now_seconds();
    model.forward_batch(entries);
    return now_seconds() - t0;
  }
  // Median over `repeats` of forward_mean.
  double forward_median(KvCache& cache, int32_t m, int repeats, double min_seconds) {
    std::vector<double> reps;
    for (int r = 0; r < repeats; ++r) reps.push_back(forward_mean(cache, m, min_seconds));
    return median(reps);
  }
};

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    if (!a.write_random.empty()) {
      write_random(a.write_random, a.seed);
      std::cout << "wrote " << a.write_random << "\n";
      return 0;
    }
    PluginRegistry registry;
    Backend backend(registry.require(a.backend, SPECD_KIND_BACKEND));
    DeviceOptions opt;
    opt.threads = a.threads;
    auto device = backend.open(opt);
    auto model = LlamaModel::load(a.model, *device);
    model->set_kv_dtype(kv_dtype(a.kv_type));
    const ModelInfo& in = model->info();
    Bench b{*model, {}};
    if (a.prefill > static_cast<int32_t>(in.n_ctx))
      throw UsageError("--prefill " + std::to_string(a.prefill) + ": " + in.path + " holds " +
                       std::to_string(in.n_ctx) + " tokens");
    const int32_t n_prefill = a.prefill ? a.prefill : std::min<int32_t>(128, in.n_ctx / 2);
    // A given prefix needs room after it for 64 decoded tokens and the largest v(m) forward.
    if (a.prefix && a.prefix + 96 > in.n_ctx)
      throw UsageError("--prefix " + std::to_string(a.prefix) + ": " + in.path + " holds " +
                       std::to_string(in.n_ctx) +
                       " tokens, and the timings need 96 after the prefix");
    const int32_t n_ctx = std::min<int32_t>(in.n_ctx, std::max({256, a.prefix + 96, n_prefill}));
    const int32_t prefix = a.prefix ? a.prefix : std::min<int32_t>(64, n_ctx / 4);

    // Prefill: one chain of n_prefill tokens from an empty cache.
    auto cache = model->new_cache(n_ctx);
    std::vector<double> prefill;
    if (a.only_m && a.sequences > 1) {
      // A server step: every sequence's rows in one pass, each after its own prefix.
      std::vector<std::unique_ptr<KvCache>> caches;
      for (int32_t sq = 0; sq < a.sequences; ++sq) {
        caches.push_back(model->new_cache(prefix + a.only_m));
        b.fill_prefix(*caches.back(), prefix);
      }
      b.batch_time(caches, a.only_m);  // warm-up
      std::vector<double> reps;
      for (int r = 0; r < a.repeats; ++r) {
        double total = 0;
        int iters = 0;
        while (iters < 3 || total < 0.5) total += b.batch_time(caches, a.only_m), ++iters;
        reps.push_back(total / iters);
      }
      std::printf(
          "forward   %.3f ms (%d sequences of m = %d after %d tokens each, one "
          "batched pass, median of %d repeats)\n",
          median(reps) * 1e3, a.sequences, a.only_m, prefix, a.repeats);
      return 0;
    }
    if (a.only_m) {
      b.fill_prefix(*cache, prefix);
      std::printf("forward   %.3f ms (m = %d after %d tokens, median of %d repeats)\n",
                  b.forward_median(*cache, a.only_m, a.repeats, 0.5) * 1e3, a.only_m, prefix,
                  a.repeats);
      return 0;
    }
    if (!a.decode_only) {
      b.forward_time(*cache, n_prefill);  // warm-up
      for (int r = 0; r < a.repeats; ++r) prefill.push_back(b.forward_time(*cache, n_prefill));
    }

    // Decode: one token at a time, committed, after `prefix` tokens. On the CPU backend the
    // memory's read roof is taken, with the device's threads, before each repeat and after the
    // last: each repeat's share of the roof is against the better of the two readings beside
    // it, so a machine whose bandwidth drifts between runs still gives the same share.
    const bool cpu = a.backend == "cpu";
    const int device_threads = static_cast<int>(device->info().threads);
    const bool read_roof = cpu && !a.decode_only;
    std::vector<double> decode, roofs;
    const int32_t n_decode = std::min<int32_t>(64, n_ctx - prefix - 1);
    for (int r = 0; r < a.repeats; ++r) {
      b.fill_prefix(*cache, prefix);
      if (read_roof) roofs.push_back(bench::read_bandwidth(device_threads));
      double total = 0;
      for (int32_t i = 0; i < n_decode; ++i) {
        total += b.forward_time(*cache, 1);
        model->commit(*cache, std::vector<int32_t>{0});
      }
      decode.push_back(total / n_decode);
    }
    if (a.decode_only) {
      std::printf("decode    %.1f tokens/s (m = 1 after %d tokens, median of %d repeats)\n",
                  1.0 / median(decode), prefix, a.repeats);
      return 0;
    }
    if (read_roof) roofs.push_back(bench::read_bandwidth(device_threads));

    // v(m): forwards of m tokens after the same committed prefix (never committed).
    std::vector<int32_t> ms;
    for (int32_t m = 1; m <= 16; ++m) ms.push_back(m);
    ms.push_back(32);
    // Each repeat times m tokens right beside one token (in alternating order), so the two
    // times of a pair see the same machine load (this VM's speed drifts over seconds); v(m) is
    // the median of the pairs' ratios, time(m) the median of the times.
    // The CPU's integer roof as the forward's threads see it, taken just before and just after
    // the v(m) timings: forwards of several rows are bound by it, and on a shared host it
    // drops while other tenants' vector work runs on the same cores (docs/PERFORMANCE.md,
    // "Quantized weights"), so it tells a reader which state of the machine the v(m) figures
    // describe.
    const std::vector<double> roof_before =
        cpu ? bench::int8_mac_roof_concurrent(device_threads) : std::vector<double>{};
    // Back to the prefix: refilled, since a hybrid model's recurrent state cannot be cut back.
    b.fill_prefix(*cache, prefix);
    std::vector<std::vector<double>> times(ms.size()), ratios(ms.size());
    for (int r = 0; r < a.repeats; ++r)
      for (size_t i = 0; i < ms.size(); ++i) {
        const bool one_first = r % 2 == 0 || ms[i] == 1;
        const double t1_before = one_first ? b.forward_mean(*cache, 1, 0.02) : 0;
        const double tm = ms[i] == 1 ? t1_before : b.forward_mean(*cache, ms[i], 0.02);
        const double t1 = one_first ? t1_before : b.forward_mean(*cache, 1, 0.02);
        times[i].push_back(tm);
        ratios[i].push_back(tm / t1);
      }
    const std::vector<double> roof_after =
        cpu ? bench::int8_mac_roof_concurrent(device_threads) : std::vector<double>{};
    std::vector<double> t_m, v_m;
    for (size_t i = 0; i < ms.size(); ++i) {
      t_m.push_back(median(times[i]));
      v_m.push_back(median(ratios[i]));
    }

    const double decode_tps = 1.0 / median(decode);
    const double prefill_tps = n_prefill / median(prefill);
    const specd_device_info di = device->info();
    const double weight_bytes = double(bench::decode_weight_bytes(a.model));
    std::vector<double> shares;  // each repeat's weight reads over the roof beside it
    for (size_t r = 0; r + 1 < roofs.size(); ++r)
      shares.push_back(weight_bytes / decode[r] / std::max(roofs[r], roofs[r + 1]));
    const bool moe = in.n_expert > 0;
    const double copy_bw = bench::copy_bandwidth();
    if (a.json) {
      std::printf(
          "{\"model\": \"%s\", \"params\": %lld, \"weight_type\": \"%s\", \"device\": \"%s\", "
          "\"threads\": %u, \"repeats\": %d, \"clock\": \"%s\", \"decode_tokens_per_s\": %.2f, "
          "\"prefill_tokens\": %d, \"prefill_tokens_per_s\": %.2f, \"decode_weight_bytes\": %.0f, "
          "\"decode_bytes_per_s\": %.4g, \"read_roof_gb_per_s\": [%s], \"read_roof_share\": %.3f, "
          "\"copy_bytes_per_s\": %.4g, "
          "\"int8_roof_gmacs_before\": [%s], \"int8_roof_gmacs_after\": [%s], \"forward_ms\": {",
          in.path.c_str(), static_cast<long long>(in.n_params), in.weight_type.c_str(), di.name,
          di.threads, a.repeats, g_cpu_time ? "cpu" : "wall", decode_tps, n_prefill, prefill_tps,
          weight_bytes, weight_bytes * decode_tps,
          roofs.empty() ? "" : joined(roofs, 1e9, 2).c_str(), shares.empty() ? 0.0 : median(shares),
          copy_bw, roof_before.empty() ? "" : joined(roof_before, 1e9, 1).c_str(),
          roof_after.empty() ? "" : joined(roof_after, 1e9, 1).c_str());
      for (size_t i = 0; i < ms.size(); ++i)
        std::printf("%s\"%d\": %.4f", i ? ", " : "", ms[i], t_m[i] * 1e3);
      std::printf("}, \"v\": {");
      for (size_t i = 0; i < ms.size(); ++i)
        std::printf("%s\"%d\": %.3f", i ? ", " : "", ms[i], v_m[i]);
      std::printf("}");
      if (moe) {
        std::printf(", \"experts_per_layer\": {");
        for (size_t i = 0; i < ms.size(); ++i)
          std::printf("%s\"%d\": %.2f", i ? ", " : "", ms[i], b.experts_per_layer(ms[i]));
        std::printf("}");
      }
      std::printf("}\n");
    } else {
      std::printf("model     %s (%s, %.2f M params, %s)\n", in.path.c_str(), in.name.c_str(),
                  in.n_params / 1e6, in.weight_type.c_str());
      std::printf("device    %s, median of %d repeats, %s\n", di.name, a.repeats,
                  g_cpu_time ? "process CPU time" : "wall time");
      std::printf("decode    %.1f tokens/s (m = 1 after %d tokens)\n", decode_tps, prefix);
      std::printf("memory    %.2f GB/s of weights read in decoding (%.1f MB per token)",
                  weight_bytes * decode_tps / 1e9, weight_bytes / 1e6);
      if (read_roof)
        std::printf(
            ", %.0f%% of the read roof (%.0f-%.0f%% over the repeats)\n"
            "roof      %d thread%s reading at once beside each repeat: %.2f GB/s (%.2f-%.2f);",
            100 * median(shares), 100 * *std::min_element(shares.begin(), shares.end()),
            100 * *std::max_element(shares.begin(), shares.end()), device_threads,
            device_threads == 1 ? "" : "s", median(roofs) / 1e9,
            *std::min_element(roofs.begin(), roofs.end()) / 1e9,
            *std::max_element(roofs.begin(), roofs.end()) / 1e9);
      std::printf("%s memcpy %.2f GB/s (read + write, one thread)\n", read_roof ? "" : ";",
                  copy_bw / 1e9);
      std::printf("prefill   %.1f tokens/s (%d tokens in one forward)\n", prefill_tps, n_prefill);
      if (!roof_before.empty())
        std::printf(
            "compute   512-bit vpdpbusd, %d thread%s at once: %s GMAC/s per thread before "
            "v(m), %s after\n",
            device_threads, device_threads == 1 ? "" : "s", joined(roof_before, 1e9, 0).c_str(),
            joined(roof_after, 1e9, 0).c_str());
      std::printf(
          "v(m) = time(m tokens) / time(1 token), after %d committed tokens (median of ratios "
          "timed in pairs)\n",
          prefix);
      if (moe)
        std::printf("experts   %d of %d per token; a pass of m rows runs the union of theirs\n",
                    in.n_expert_used, in.n_expert);
      std::printf("   m   time_ms   v(m)%s\n", moe ? "   experts/layer" : "");
      for (size_t i = 0; i < ms.size(); ++i) {
        std::printf("%4d %9.3f %6.2f", ms[i], t_m[i] * 1e3, v_m[i]);
        if (moe) std::printf(" %17.2f", b.experts_per_layer(ms[i]));
        std::printf("\n");
      }
    }
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "specd-model-bench: " << e.what() << "\n";
    return usage();
  } catch (const std::exception& e) {
    std::cerr << "specd-model-bench: " << e.what() << "\n";
    return 1;
  }
}
