// Shared helpers of the backend conformance suite: which backends to test, random data,
// weight encodings and naive double-precision references.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "backend/backend.hpp"
#include "common/error.hpp"
#include "gguf/ggml_types.hpp"
#include "plugin/registry.hpp"
#include "specd/cpp/ggml_blocks.hpp"
#include "test_paths.hpp"

namespace specd::test {

inline PluginRegistry& registry() {
  static PluginRegistry reg({std::string(SPECD_BINARY_DIR) + "/bin/plugins"});
  return reg;
}

// Backend ids under test: $SPECD_TEST_BACKENDS (comma-separated) or cpu, cuda, hip.
inline std::vector<std::string> backend_ids() {
  const char* env = std::getenv("SPECD_TEST_BACKENDS");
  std::string list = env && *env ? env : "cpu,cuda,hip";
  std::vector<std::string> ids;
  std::stringstream ss(list);
  for (std::string id; std::getline(ss, id, ',');)
    if (!id.empty()) ids.push_back(id);
  return ids;
}

// Sets an environment variable for its lifetime (the CPU backend reads SPECD_CPU_KERNEL and
// SPECD_CPU_QUANT when a device opens), restoring the previous value afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// The CPU backend's exact family (f32 activations over exactly decoded weights) for tests
// that compare quantized products with f32 ones bit for bit or within f32 rounding.
struct ExactQuant : ScopedEnv {
  ExactQuant() : ScopedEnv("SPECD_CPU_QUANT", "exact") {}
};

struct OpenBackend {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Device> device;
};

// The CPU backend with `threads` threads (it must be present); `device` lives as long as the
// returned pair.
inline OpenBackend open_cpu(uint32_t threads) {
  OpenBackend cpu;
  cpu.backend = std::make_unique<Backend>(registry().require("cpu", SPECD_KIND_BACKEND));
  DeviceOptions opt;
  opt.threads = threads;
  cpu.device = cpu.backend->open(opt);
  return cpu;
}

// The message with which opening a CPU device fails under the environment as it is now (a
// variable the device reads at open set to a value it refuses), or "" when the device opens.
inline std::string cpu_open_error() {
  Backend backend(registry().require("cpu", SPECD_KIND_BACKEND));
  try {
    backend.open();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The CPU backend opened with GEMM kernel `kernel` (SPECD_CPU_KERNEL, read at open) and
// `threads` threads (0: the backend's choice); `device` is null, after a MESSAGE, when this
// CPU cannot run that kernel.
inline OpenBackend open_cpu_kernel(const char* kernel, uint32_t threads = 0) {
  const ScopedEnv choice("SPECD_CPU_KERNEL", kernel);
  OpenBackend cpu;
  cpu.backend = std::make_unique<Backend>(registry().require("cpu", SPECD_KIND_BACKEND));
  DeviceOptions opt;
  opt.threads = threads;
  try {
    cpu.device = cpu.backend->open(opt);
  } catch (const Error& e) {
    MESSAGE("skipping kernel " << std::string(kernel) << ": " << std::string(e.what()));
  }
  return cpu;
}

// Opens every listed backend that is built and can run here, with `threads` threads; prints a
// MESSAGE for each one skipped. The CPU backend must always be present.
inline std::vector<OpenBackend> open_backends(uint32_t threads = 2) {
  std::vector<OpenBackend> out;
  for (const std::string& id : backend_ids()) {
    const LoadedPlugin* p = registry().find(id, SPECD_KIND_BACKEND);
    if (!p) {
      if (id == "cpu") FAIL("the cpu backend plugin was not found");
      MESSAGE("skipping backend '" << id << "': plugin not built");
      continue;
    }
    auto b = std::make_unique<Backend>(*p);
    std::string reason;
    if (b->score(&reason) == 0) {
      MESSAGE("skipping backend '" << id << "': cannot run here: " << reason);
      continue;
    }
    DeviceOptions opt;
    opt.threads = threads;
    auto d = b->open(opt);
    out.push_back({std::move(b), std::move(d)});
  }
  return out;
}

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// True for the block-quantized dtypes other than q8_0 (no quantizer here: random blocks).
inline bool random_block_type(specd_dtype dtype) {
  return dtype != SPECD_DTYPE_F32 && dtype != SPECD_DTYPE_F16 && dtype != SPECD_DTYPE_BF16 &&
         dtype != SPECD_DTYPE_Q8_0;
}

// Random blocks of a block type: random quant bits, and scale fields (binary16 d, dmin, m;
// mxfp4's E8M0 byte) set to moderate values so the products stay in a sane range. `seed`
// picks the blocks.
inline std::vector<uint8_t> random_blocks(specd_dtype dtype, int64_t rows, int64_t cols,
                                          uint32_t seed) {
  const ggml::BlockLayout l = ggml::block_layout(dtype);
  const int64_t blocks = rows * cols / l.elements;
  std::vector<uint8_t> out(static_cast<size_t>(blocks * l.bytes));
  std::mt19937 rng(seed);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  if (dtype == SPECD_DTYPE_MXFP4) {  // its E8M0 scale byte: d = 2^-10 .. 2^-4
    std::uniform_int_distribution<int> e(118, 124);
    for (int64_t b = 0; b < blocks; ++b) out[static_cast<size_t>(b * l.bytes)] = uint8_t(e(rng));
    return out;
  }
  std::vector<uint32_t> halves;  // byte offsets of binary16 fields in a block
  switch (dtype) {
    case SPECD_DTYPE_Q4_1:
    case SPECD_DTYPE_Q5_1:
    case SPECD_DTYPE_Q4_K:
    case SPECD_DTYPE_Q5_K:
      halves = {0, 2};
      break;
    case SPECD_DTYPE_Q2_K:
      halves = {80, 82};
      break;
    case SPECD_DTYPE_Q3_K:
      halves = {108};
      break;
    case SPECD_DTYPE_Q6_K:
      halves = {208};
      break;
    default:
      halves = {0};
      break;
  }
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (int64_t b = 0; b < blocks; ++b)
    for (uint32_t off : halves) {
      const uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(out.data() + b * l.bytes + off, &h, 2);
    }
  return out;
}

// Encodes a row-major [rows, cols] f32 matrix in `dtype` (GGUF layout). Block types other
// than q8_0 get random blocks seeded from the values (decode gives what they represent).
inline std::vector<uint8_t> encode(specd_dtype dtype, const std::vector<float>& v, int64_t rows,
                                   int64_t cols) {
  if (random_block_type(dtype)) {
    uint32_t seed;
    std::memcpy(&seed, v.data(), 4);
    return random_blocks(dtype, rows, cols, seed);
  }
  const uint64_t rb = dtype_row_bytes(dtype, cols);
  std::vector<uint8_t> out(rb * rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = v.data() + r * cols;
    uint8_t* dst = out.data() + r * rb;
    for (int64_t c = 0; c < cols; ++c) {
      if (dtype == SPECD_DTYPE_F32) {
        std::memcpy(dst + 4 * c, src + c, 4);
      } else if (dtype == SPECD_DTYPE_F16 || dtype == SPECD_DTYPE_BF16) {
        const uint16_t h = dtype == SPECD_DTYPE_F16 ? f32_to_f16(src[c]) : f32_to_bf16(src[c]);
        std::memcpy(dst + 2 * c, &h, 2);
      }
    }
    if (dtype == SPECD_DTYPE_Q8_0) quantize_q8_0(src, dst, cols);
  }
  return out;
}

// The values `encode` represents, exactly, as f32.
inline std::vector<float> decode(specd_dtype dtype, const std::vector<uint8_t>& bytes, int64_t rows,
                                 int64_t cols) {
  const uint64_t rb = dtype_row_bytes(dtype, cols);
  std::vector<float> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = bytes.data() + r * rb;
    float* dst = out.data() + r * cols;
    if (dtype != SPECD_DTYPE_F32 && dtype != SPECD_DTYPE_F16 && dtype != SPECD_DTYPE_BF16) {
      dequantize_row(static_cast<GgmlType>(dtype), src, dst, cols);
      continue;
    }
    for (int64_t c = 0; c < cols; ++c) {
      if (dtype == SPECD_DTYPE_F32) {
        std::memcpy(dst + c, src + 4 * c, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, src + 2 * c, 2);
        dst[c] = dtype == SPECD_DTYPE_F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
    }
  }
  return out;
}

inline Buffer upload_bytes(Device& dev, const void* data, size_t size) {
  Buffer b = dev.alloc(size ? size : 4);
  if (size) b.upload(data, size);
  return b;
}

template <class T>
Buffer upload_vec(Device& dev, const std::vector<T>& v) {
  return upload_bytes(dev, v.data(), v.size() * sizeof(T));
}

template <class T>
std::vector<T> download_vec(const Buffer& b, size_t n) {
  std::vector<T> v(n);
  b.download(v.data(), n * sizeof(T));
  return v;
}

// Each row of x [rows, width] roped alone at its position gives the bits of `roped`, the
// rows roped together with `params`.
inline void check_rope_rows_alone(Device& dev, const std::vector<float>& x,
                                  const std::vector<int32_t>& positions, int64_t width,
                                  const specd_rope_params& params,
                                  const std::vector<float>& roped) {
  for (size_t i = 0; i < positions.size(); ++i) {
    const std::vector<float> row(x.begin() + i * width, x.begin() + (i + 1) * width);
    Buffer br = upload_vec(dev, row), bp = upload_vec(dev, std::vector<int32_t>{positions[i]});
    dev.rope(br.view(SPECD_DTYPE_F32, 1, width), bp.view(SPECD_DTYPE_I32, 1, 1), params);
    const auto one = download_vec<float>(br, row.size());
    CHECK(std::memcmp(one.data(), roped.data() + i * width, row.size() * 4) == 0);
  }
}

// The f32 products of each row of `x` with `w` taken alone (one m = 1 matmul a row), made in
// `y` (room for one output row) and gathered row after row.
inline std::vector<float> matmul_row_by_row(Device& dev, const View& x, const View& w,
                                            const Buffer& y) {
  const int64_t n = w.rows();
  std::vector<float> out(x.rows() * n);
  for (int64_t i = 0; i < x.rows(); ++i) {
    dev.matmul(x.slice_rows(i, 1), w, y.view(SPECD_DTYPE_F32, 1, n));
    y.download(out.data() + i * n, n * 4);
  }
  return out;
}

// Query row i's whole key sequence (backend.h, specd_attention_mask): its prefix rows, then
// its extra slots.
inline std::vector<int64_t> row_keys(const std::vector<int32_t>& prefix,
                                     const std::vector<int32_t>& begin,
                                     const std::vector<int32_t>& extra, int64_t i) {
  std::vector<int64_t> keys;
  for (int64_t j = 0; j < prefix[i]; ++j) keys.push_back(j);
  for (int32_t e = begin[i]; e < begin[i + 1]; ++e) keys.push_back(extra[e]);
  return keys;
}

// The shape of an attention reference: heads, head_dim, scale and the ABI 0.8 options (a
// window, 0 for none; one sink per query head, empty for none).
struct AttentionShape {
  uint32_t n_head, n_kv, hd;
  float scale;
  uint32_t window = 0;
  std::vector<float> sinks;
};

// The double-precision reference of attention (backend.h): for each query row i (q [m,
// n_head * hd]) and head h, the keys keys[i] (cache rows of k and v [rows, n_kv * hd], in
// logical order) cut to their last `window`, scores scale * q.k, and
//   out = sum_j e^(s_j - M) v_j / (sum_j e^(s_j - M) + e^(sink_h - M)),
// M the largest of the scores and the sink (no sink: no term). `mag` gets, per element, the
// sum of |weight * value|: the scale of an f32 result's rounding error.
inline void attention_reference(const std::vector<float>& q, const std::vector<float>& k,
                                const std::vector<float>& v,
                                const std::vector<std::vector<int64_t>>& keys,
                                const AttentionShape& a, std::vector<double>& out,
                                std::vector<double>& mag) {
  const int64_t m = static_cast<int64_t>(keys.size()), hd = a.hd, kc = a.n_kv * hd;
  out.assign(m * a.n_head * hd, 0.0);
  mag.assign(out.size(), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    std::vector<int64_t> ks = keys[i];
    if (a.window != 0 && ks.size() > a.window) ks.erase(ks.begin(), ks.end() - a.window);
    for (uint32_t h = 0; h < a.n_head; ++h) {
      const int64_t off = h / (a.n_head / a.n_kv) * hd;
      const float* qi = q.data() + (i * a.n_head + h) * hd;
      std::vector<double> s(ks.size());
      double mx = a.sinks.empty() ? -INFINITY : a.sinks[h];
      for (size_t j = 0; j < ks.size(); ++j) {
        double d = 0;
        for (int64_t c = 0; c < hd; ++c) d += double(qi[c]) * k[ks[j] * kc + off + c];
        s[j] = d * a.scale;
        mx = std::max(mx, s[j]);
      }
      double sum = a.sinks.empty() ? 0.0 : std::exp(double(a.sinks[h]) - mx);
      for (double& x : s) sum += (x = std::exp(x - mx));
      double* o = out.data() + (i * a.n_head + h) * hd;
      double* g = mag.data() + (i * a.n_head + h) * hd;
      for (size_t j = 0; j < ks.size(); ++j)
        for (int64_t c = 0; c < hd; ++c) {
          const double vj = v[ks[j] * kc + off + c];
          o[c] += s[j] / sum * vj;
          g[c] += s[j] / sum * std::fabs(vj);
        }
    }
  }
}

constexpr specd_dtype kWeightTypes[] = {
    SPECD_DTYPE_F32,  SPECD_DTYPE_F16,    SPECD_DTYPE_BF16,   SPECD_DTYPE_Q8_0,
    SPECD_DTYPE_Q4_0, SPECD_DTYPE_Q4_1,   SPECD_DTYPE_Q5_0,   SPECD_DTYPE_Q5_1,
    SPECD_DTYPE_Q2_K, SPECD_DTYPE_Q3_K,   SPECD_DTYPE_Q4_K,   SPECD_DTYPE_Q5_K,
    SPECD_DTYPE_Q6_K, SPECD_DTYPE_IQ4_NL, SPECD_DTYPE_IQ4_XS, SPECD_DTYPE_MXFP4};

// Row lengths the matmul tests use for a dtype: odd tails for element types, one and several
// blocks for block types.
inline std::vector<int64_t> test_row_lengths(specd_dtype dtype) {
  const uint32_t block = ggml::block_layout(dtype).elements;
  if (block == 1) return {64, 150};
  if (block == 32) return {64, 96, 160};
  return {256, 512};
}

}  // namespace specd::test
