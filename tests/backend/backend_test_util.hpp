// Shared helpers of the backend conformance suite: which backends to test, random data,
// weight encodings and naive double-precision references.
#pragma once

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

struct OpenBackend {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Device> device;
};

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

// Encodes a row-major [rows, cols] f32 matrix in `dtype` (GGUF layout).
inline std::vector<uint8_t> encode(specd_dtype dtype, const std::vector<float>& v, int64_t rows,
                                   int64_t cols) {
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
    if (dtype == SPECD_DTYPE_Q8_0) {
      dequantize_q8_0(src, dst, cols);
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

constexpr specd_dtype kWeightTypes[] = {SPECD_DTYPE_F32, SPECD_DTYPE_F16, SPECD_DTYPE_BF16,
                                        SPECD_DTYPE_Q8_0};

}  // namespace specd::test
