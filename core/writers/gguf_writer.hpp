// Builds GGUF v3 files: metadata of every type and tensors laid out at the file's alignment.
// Used for test fixtures and for generating constructed models.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/ggml_types.hpp"
#include "gguf/gguf_value.hpp"

namespace specd {

class GgufWriter {
 public:
  // Sets or replaces a key; insertion order of first set is kept.
  void set(const std::string& key, GgufValue value);
  // Drops a key set before (nothing when it is not there).
  void erase(const std::string& key);
  void set_string(const std::string& key, std::string v) {
    set(key, GgufValue::string(std::move(v)));
  }
  void set_u32(const std::string& key, uint32_t v) { set(key, GgufValue::uint32(v)); }
  void set_i32(const std::string& key, int32_t v) { set(key, GgufValue::int32(v)); }
  void set_u64(const std::string& key, uint64_t v) { set(key, GgufValue::uint64(v)); }
  void set_f32(const std::string& key, float v) { set(key, GgufValue::float32(v)); }
  void set_bool(const std::string& key, bool v) { set(key, GgufValue::boolean(v)); }
  // general.alignment, a power of two (default 32).
  void set_alignment(uint32_t alignment);

  // Raw tensor data already in the given type's layout; ne lists 1..4 dimensions, ne[0]
  // first. data must hold exactly the type's byte size for ne.
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne,
                  std::vector<uint8_t> data);
  // Converts f32 values to type (kF32, kF16, kBF16, kQ8_0, kQ4_K or kQ6_K).
  void add_tensor_f32(const std::string& name, GgmlType type, std::vector<int64_t> ne,
                      const float* values);

  // The complete file image.
  std::vector<uint8_t> serialize() const;
  // Writes serialize() to path; throws specd::Error naming the path on I/O failure.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
  };
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace specd
