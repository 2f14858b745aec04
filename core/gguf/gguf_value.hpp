// A GGUF metadata value: scalar, string or (possibly nested) array. Values own their data so
// they can be built by the writer and outlive the file they were read from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

struct GgufValue {
  GgufType type = GgufType::kUint8;
  uint64_t u = 0;  // kUint*, kBool
  int64_t i = 0;   // kInt*
  double f = 0;    // kFloat*
  std::string str;
  GgufType elem_type = GgufType::kUint8;  // for kArray
  std::vector<GgufValue> array;

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
  // All elements must have type elem (checked by the writer).
  static GgufValue make_array(GgufType elem, std::vector<GgufValue> values);
  static GgufValue string_array(const std::vector<std::string>& values);
  static GgufValue float32_array(const std::vector<float>& values);
  static GgufValue int32_array(const std::vector<int32_t>& values);

  // The integer value if this is an integer type and it fits in the target range.
  std::optional<int64_t> as_int64() const;
  std::optional<uint64_t> as_uint64() const;
  bool is_integer() const { return gguf_is_integer(type); }
  bool is_float() const { return type == GgufType::kFloat32 || type == GgufType::kFloat64; }
  // "uint32", "array[string]", ...
  std::string type_name() const;

  bool operator==(const GgufValue& other) const;

 private:
  static GgufValue unsigned_of(GgufType t, uint64_t v);
  static GgufValue signed_of(GgufType t, int64_t v);
};

}  // namespace specd
