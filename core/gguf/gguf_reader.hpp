// Memory-mapped GGUF (v2, v3) reader. Everything in the file is validated while opening:
// a GgufFile that exists is internally consistent and every tensor's data lies inside the
// mapping, so users never need bounds checks of their own.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gguf/ggml_types.hpp"
#include "gguf/gguf_value.hpp"
#include "gguf/mapped_file.hpp"

namespace specd {

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::kF32;
  uint32_t n_dims = 0;
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ne[0] is the contiguous dimension
  int64_t n_elements = 0;
  size_t n_bytes = 0;
  uint64_t offset = 0;  // relative to the start of the data section
  const void* data = nullptr;
};

// Whether the regular file at `path` starts with the GGUF magic (false when it cannot be
// read): for paths that may name a GGUF file or a file of another format.
bool is_gguf_file(const std::string& path);

class GgufFile {
 public:
  // Maps and validates the file; throws specd::Error("<path>: ...") on any problem.
  static GgufFile open(const std::string& path);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  size_t file_size() const { return map_ ? map_->size() : 0; }
  // Tensor bytes a device copied: their pages are dropped from memory (MappedFile).
  void drop_pages(const void* p, size_t n) const {
    if (map_) map_->drop_pages(p, n);
  }

  // Bytes held in memory by the parsed metadata and tensor infos (an estimate that counts
  // every element, entry and index node); the reader refuses a file whose parse would hold
  // more than 4 times its size plus 1 MiB.
  size_t held_bytes() const { return held_bytes_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters: throw when the key is missing or has the wrong type. Integer getters
  // accept any integer type whose value fits; float getters accept float32 and float64.
  const std::string& get_string(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;
  int32_t get_i32(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  int64_t get_i64(std::string_view key) const;
  float get_f32(std::string_view key) const;
  double get_f64(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  const GgufValue& get_array(std::string_view key) const;
  // Also checks the element type (kString, kFloat32, ...).
  const GgufValue& get_array(std::string_view key, GgufType elem) const;

  // The same, returning nullopt when the key is absent (a wrong type still throws).
  std::optional<std::string> get_string_opt(std::string_view key) const;
  std::optional<uint32_t> get_u32_opt(std::string_view key) const;
  std::optional<int32_t> get_i32_opt(std::string_view key) const;
  std::optional<uint64_t> get_u64_opt(std::string_view key) const;
  std::optional<int64_t> get_i64_opt(std::string_view key) const;
  std::optional<float> get_f32_opt(std::string_view key) const;
  std::optional<bool> get_bool_opt(std::string_view key) const;
  const GgufValue* get_array_opt(std::string_view key, GgufType elem) const;

  // Tensors in file order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* tensor(std::string_view name) const;
  // Throws "<path>: missing tensor '<name>'".
  const GgufTensor& require_tensor(std::string_view name) const;

 private:
  friend class GgufParser;
  [[noreturn]] void type_error(std::string_view key, const GgufValue& v,
                               const std::string& expected) const;
  const GgufValue& require(std::string_view key) const;
  int64_t integer_in_range(std::string_view key, const GgufValue& v, int64_t lo, int64_t hi,
                           const char* expected) const;

  std::string path_;
  std::shared_ptr<MappedFile> map_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  size_t held_bytes_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace specd
