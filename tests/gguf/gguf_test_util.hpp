// Helpers shared by the GGUF tests: a scratch directory and a raw little-endian byte builder
// for files the writer would refuse to make.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "scratch_dir.hpp"

namespace specd::test {

inline std::string scratch_path(const std::string& name) {
  static const ScratchDir scratch("specd_gguf_test_");  // removed when the program exits
  return scratch.file(name);
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path);
  if (!bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

struct RawGguf {
  std::vector<uint8_t> b;
  template <typename T>
  RawGguf& put(T v) {
    const size_t at = b.size();
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
    return *this;
  }
  RawGguf& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    put<uint32_t>(0x46554747).put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
    return *this;
  }
  RawGguf& kv_u32(const std::string& key, uint32_t v) {
    str(key).put<uint32_t>(4).put<uint32_t>(v);
    return *this;
  }
  RawGguf& tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type,
                  uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) put<int64_t>(d);
    put<uint32_t>(type).put<uint64_t>(offset);
    return *this;
  }
  RawGguf& pad(size_t alignment = 32) {
    while (b.size() % alignment) b.push_back(0);
    return *this;
  }
  RawGguf& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
};

}  // namespace specd::test
