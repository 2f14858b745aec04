// A GGUF metadata value: scalar, string or (possibly nested) array. Values own their data so
// they can be built by the writer and outlive the file they were read from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

constexpr uint32_t kGgufTypeCount = 13;

// "uint32", "string", ...; "type N" for ids outside the enum.
std::string gguf_type_name(GgufType type);
// Size on disk of a fixed-size scalar type, 0 for string and array.
size_t gguf_scalar_size(GgufType type);
bool gguf_is_integer(GgufType type);

// Arrays are kept compact, never as one GgufValue per element: scalar elements packed as
// on disk (little-endian, gguf_scalar_size(elem_type) bytes each), string elements
// concatenated with their end offsets, and only nested arrays (rare) as values. A parsed
// array therefore holds about as many bytes as the file spends on it (held_bytes()).
struct GgufValue {
  GgufType type = GgufType::kUint8;
  uint64_t u = 0;  // kUint*, kBool
  int64_t i = 0;   // kInt*
  double f = 0;    // kFloat*
  std::string str;
  GgufType elem_type = GgufType::kUint8;  // for kArray

  static GgufValue uint8(uint8_t v) { return unsigned_of(GgufType::kUint8, v); }
  static GgufValue uint16(uint16_t v) { return unsigned_of(GgufType::kUint16, v); }
  static GgufValue uint32(uint32_t v) { return unsigned_of(GgufType::kUint32, v); }
  static GgufValue uint64(uint64_t v) { return unsigned_of(GgufType::kUint64, v); }
  static GgufValue int8(int8_t v) { return signed_of(GgufType::kInt8, v); }
  static GgufValue int16(int16_t v) { return signed_of(GgufType::kInt16, v); }
  static GgufValue int32(int32_t v) { return signed_of(GgufType::kInt32, v); }
  static GgufValue int64(int64_t v) { return signed_of(GgufType::kInt64, v); }
  static GgufValue float32(float v);
  static GgufValue float64(double v);
  static GgufValue boolean(bool v) { return unsigned_of(GgufType::kBool, v ? 1 : 0); }
  static GgufValue string(std::string v);
  // All elements must have type elem (throws specd::Error otherwise).
  static GgufValue make_array(GgufType elem, const std::vector<GgufValue>& values);
  static GgufValue string_array(const std::vector<std::string>& values);
  static GgufValue float32_array(const std::vector<float>& values);
  static GgufValue int32_array(const std::vector<int32_t>& values);
  // An empty array of `elem`, to fill with the append_* calls (the reader's way in).
  static GgufValue empty_array(GgufType elem);

  // The integer value if this is an integer type and it fits in the target range.
  std::optional<int64_t> as_int64() const;
  std::optional<uint64_t> as_uint64() const;
  bool is_integer() const { return gguf_is_integer(type); }
  bool is_float() const { return type == GgufType::kFloat32 || type == GgufType::kFloat64; }
  // "uint32", "array[string]", ...
  std::string type_name() const;

  // ---- Arrays (type kArray). Element accessors check the index and the element type
  // (throwing specd::Error); the views they return live as long as the value.
  size_t array_size() const;
  std::string_view string_at(size_t k) const;  // elem_type kString
  int64_t int_at(size_t k) const;              // integer elem_type (uint64 above 2^63: throws)
  uint64_t uint_at(size_t k) const;            // integer or bool elem_type, value >= 0
  double float_at(size_t k) const;             // kFloat32 / kFloat64
  const GgufValue& nested_at(size_t k) const;  // kArray
  // Element k as a value of its own (any element type), and all of them: for code that
  // edits arrays (tests, tools), not for bulk reading.
  GgufValue element(size_t k) const;
  std::vector<GgufValue> elements() const;
  // The packed bytes of a scalar array, as on disk (n * gguf_scalar_size(elem_type)).
  const std::vector<uint8_t>& packed() const { return raw_; }
  void append_packed(const void* bytes, size_t n_bytes);  // scalar arrays: whole elements
  void append_string(std::string_view s);                 // string arrays
  void append_nested(GgufValue v);                        // arrays of arrays

  // Memory this value holds, its own size included (for the reader's bound).
  size_t held_bytes() const;

  bool operator==(const GgufValue& other) const;

 private:
  static GgufValue unsigned_of(GgufType t, uint64_t v);
  static GgufValue signed_of(GgufType t, int64_t v);
  void check_element(size_t k, const char* accessor) const;

  std::vector<uint8_t> raw_;    // scalar elements, packed
  std::string chars_;           // string elements, concatenated
  std::vector<uint64_t> ends_;  // string k is chars_[ends_[k-1], ends_[k])
  std::vector<GgufValue> nested_;
};

}  // namespace specd
