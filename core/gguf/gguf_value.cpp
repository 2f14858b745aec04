#include "gguf/gguf_value.hpp"

#include <limits>

namespace specd {

std::string gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
      return "uint8";
    case GgufType::kInt8:
      return "int8";
    case GgufType::kUint16:
      return "uint16";
    case GgufType::kInt16:
      return "int16";
    case GgufType::kUint32:
      return "uint32";
    case GgufType::kInt32:
      return "int32";
    case GgufType::kFloat32:
      return "float32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kUint64:
      return "uint64";
    case GgufType::kInt64:
      return "int64";
    case GgufType::kFloat64:
      return "float64";
  }
  return "type " + std::to_string(static_cast<uint32_t>(type));
}

size_t gguf_scalar_size(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

bool gguf_is_integer(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64:
      return true;
    default:
      return false;
  }
}

static bool is_unsigned(GgufType t) {
  return t == GgufType::kUint8 || t == GgufType::kUint16 || t == GgufType::kUint32 ||
         t == GgufType::kUint64;
}

GgufValue GgufValue::unsigned_of(GgufType t, uint64_t v) {
  GgufValue r;
  r.type = t;
  r.u = v;
  return r;
}

GgufValue GgufValue::signed_of(GgufType t, int64_t v) {
  GgufValue r;
  r.type = t;
  r.i = v;
  return r;
}

GgufValue GgufValue::float32(float v) {
  GgufValue r;
  r.type = GgufType::kFloat32;
  r.f = v;
  return r;
}

GgufValue GgufValue::float64(double v) {
  GgufValue r;
  r.type = GgufType::kFloat64;
  r.f = v;
  return r;
}

GgufValue GgufValue::string(std::string v) {
  GgufValue r;
  r.type = GgufType::kString;
  r.str = std::move(v);
  return r;
}

GgufValue GgufValue::make_array(GgufType elem, std::vector<GgufValue> values) {
  GgufValue r;
  r.type = GgufType::kArray;
  r.elem_type = elem;
  r.array = std::move(values);
  return r;
}

GgufValue GgufValue::string_array(const std::vector<std::string>& values) {
  std::vector<GgufValue> v;
  v.reserve(values.size());
  for (const auto& s : values) v.push_back(string(s));
  return make_array(GgufType::kString, std::move(v));
}

GgufValue GgufValue::float32_array(const std::vector<float>& values) {
  std::vector<GgufValue> v;
  v.reserve(values.size());
  for (float x : values) v.push_back(float32(x));
  return make_array(GgufType::kFloat32, std::move(v));
}

GgufValue GgufValue::int32_array(const std::vector<int32_t>& values) {
  std::vector<GgufValue> v;
  v.reserve(values.size());
  for (int32_t x : values) v.push_back(int32(x));
  return make_array(GgufType::kInt32, std::move(v));
}

std::optional<int64_t> GgufValue::as_int64() const {
  if (!is_integer()) return std::nullopt;
  if (is_unsigned(type)) {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  return i;
}

std::optional<uint64_t> GgufValue::as_uint64() const {
  if (!is_integer()) return std::nullopt;
  if (is_unsigned(type)) return u;
  if (i < 0) return std::nullopt;
  return static_cast<uint64_t>(i);
}

std::string GgufValue::type_name() const {
  if (type != GgufType::kArray) return gguf_type_name(type);
  return "array[" + gguf_type_name(elem_type) + "]";
}

bool GgufValue::operator==(const GgufValue& o) const {
  if (type != o.type) return false;
  switch (type) {
    case GgufType::kString:
      return str == o.str;
    case GgufType::kArray:
      return elem_type == o.elem_type && array == o.array;
    case GgufType::kFloat32:
    case GgufType::kFloat64:
      return f == o.f || (f != f && o.f != o.f);
    default:
      return is_unsigned(type) || type == GgufType::kBool ? u == o.u : i == o.i;
  }
}

}  // namespace specd
