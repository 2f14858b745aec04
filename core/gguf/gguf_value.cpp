#include "gguf/gguf_value.hpp"

#include <cstring>
#include <limits>

#include "common/error.hpp"

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

GgufValue GgufValue::empty_array(GgufType elem) {
  GgufValue r;
  r.type = GgufType::kArray;
  r.elem_type = elem;
  return r;
}

namespace {

// The little-endian bytes of scalar `v` stored as `t` (host is little-endian: the reader
// checks).
void pack_scalar(std::vector<uint8_t>& out, GgufType t, const GgufValue& v) {
  auto put = [&out](auto x) {
    const size_t at = out.size();
    out.resize(at + sizeof(x));
    std::memcpy(out.data() + at, &x, sizeof(x));
  };
  switch (t) {
    case GgufType::kUint8:
      put(static_cast<uint8_t>(v.u));
      break;
    case GgufType::kInt8:
      put(static_cast<int8_t>(v.i));
      break;
    case GgufType::kUint16:
      put(static_cast<uint16_t>(v.u));
      break;
    case GgufType::kInt16:
      put(static_cast<int16_t>(v.i));
      break;
    case GgufType::kUint32:
      put(static_cast<uint32_t>(v.u));
      break;
    case GgufType::kInt32:
      put(static_cast<int32_t>(v.i));
      break;
    case GgufType::kUint64:
      put(static_cast<uint64_t>(v.u));
      break;
    case GgufType::kInt64:
      put(static_cast<int64_t>(v.i));
      break;
    case GgufType::kFloat32:
      put(static_cast<float>(v.f));
      break;
    case GgufType::kFloat64:
      put(static_cast<double>(v.f));
      break;
    case GgufType::kBool:
      put(static_cast<uint8_t>(v.u != 0));
      break;
    case GgufType::kString:
    case GgufType::kArray:
      break;
  }
}

// Scalar element k of packed bytes as a value of type t.
GgufValue unpack_scalar(const std::vector<uint8_t>& raw, GgufType t, size_t k) {
  const uint8_t* at = raw.data() + k * gguf_scalar_size(t);
  auto get = [at](auto x) {
    std::memcpy(&x, at, sizeof(x));
    return x;
  };
  switch (t) {
    case GgufType::kUint8:
      return GgufValue::uint8(get(uint8_t{}));
    case GgufType::kInt8:
      return GgufValue::int8(get(int8_t{}));
    case GgufType::kUint16:
      return GgufValue::uint16(get(uint16_t{}));
    case GgufType::kInt16:
      return GgufValue::int16(get(int16_t{}));
    case GgufType::kUint32:
      return GgufValue::uint32(get(uint32_t{}));
    case GgufType::kInt32:
      return GgufValue::int32(get(int32_t{}));
    case GgufType::kUint64:
      return GgufValue::uint64(get(uint64_t{}));
    case GgufType::kInt64:
      return GgufValue::int64(get(int64_t{}));
    case GgufType::kFloat32:
      return GgufValue::float32(get(float{}));
    case GgufType::kFloat64:
      return GgufValue::float64(get(double{}));
    case GgufType::kBool:
      return GgufValue::boolean(get(uint8_t{}) != 0);
    case GgufType::kString:
    case GgufType::kArray:
      break;
  }
  return GgufValue{};
}

}  // namespace

GgufValue GgufValue::make_array(GgufType elem, const std::vector<GgufValue>& values) {
  GgufValue r = empty_array(elem);
  for (const GgufValue& v : values) {
    if (v.type != elem)
      throw Error("gguf: an array of " + gguf_type_name(elem) + " cannot hold a " + v.type_name());
    if (elem == GgufType::kString)
      r.append_string(v.str);
    else if (elem == GgufType::kArray)
      r.append_nested(v);
    else
      pack_scalar(r.raw_, elem, v);
  }
  return r;
}

GgufValue GgufValue::string_array(const std::vector<std::string>& values) {
  GgufValue r = empty_array(GgufType::kString);
  for (const auto& s : values) r.append_string(s);
  return r;
}

GgufValue GgufValue::float32_array(const std::vector<float>& values) {
  GgufValue r = empty_array(GgufType::kFloat32);
  r.append_packed(values.data(), values.size() * sizeof(float));
  return r;
}

GgufValue GgufValue::int32_array(const std::vector<int32_t>& values) {
  GgufValue r = empty_array(GgufType::kInt32);
  r.append_packed(values.data(), values.size() * sizeof(int32_t));
  return r;
}

void GgufValue::append_packed(const void* bytes, size_t n_bytes) {
  const size_t size = gguf_scalar_size(elem_type);
  if (type != GgufType::kArray || size == 0 || n_bytes % size != 0)
    throw Error("gguf: append_packed on a " + type_name());
  const auto* b = static_cast<const uint8_t*>(bytes);
  raw_.insert(raw_.end(), b, b + n_bytes);
}

void GgufValue::append_string(std::string_view s) {
  if (type != GgufType::kArray || elem_type != GgufType::kString)
    throw Error("gguf: append_string on a " + type_name());
  chars_.append(s);
  ends_.push_back(chars_.size());
}

void GgufValue::append_nested(GgufValue v) {
  if (type != GgufType::kArray || elem_type != GgufType::kArray || v.type != GgufType::kArray)
    throw Error("gguf: append_nested on a " + type_name());
  nested_.push_back(std::move(v));
}

size_t GgufValue::array_size() const {
  if (type != GgufType::kArray) return 0;
  if (elem_type == GgufType::kString) return ends_.size();
  if (elem_type == GgufType::kArray) return nested_.size();
  const size_t size = gguf_scalar_size(elem_type);
  return size ? raw_.size() / size : 0;
}

void GgufValue::check_element(size_t k, const char* accessor) const {
  if (type != GgufType::kArray)
    throw Error(std::string("gguf: ") + accessor + " on a " + type_name() + ", not an array");
  if (k >= array_size())
    throw Error(std::string("gguf: ") + accessor + "(" + std::to_string(k) + ") on an array of " +
                std::to_string(array_size()) + " elements");
}

std::string_view GgufValue::string_at(size_t k) const {
  check_element(k, "string_at");
  if (elem_type != GgufType::kString) throw Error("gguf: string_at on an " + type_name());
  const uint64_t begin = k == 0 ? 0 : ends_[k - 1];
  return std::string_view(chars_).substr(begin, ends_[k] - begin);
}

int64_t GgufValue::int_at(size_t k) const {
  check_element(k, "int_at");
  const auto v = unpack_scalar(raw_, elem_type, k).as_int64();
  if (!gguf_is_integer(elem_type) || !v)
    throw Error("gguf: int_at(" + std::to_string(k) + ") on an " + type_name() +
                (gguf_is_integer(elem_type) ? " (value above int64)" : ""));
  return *v;
}

uint64_t GgufValue::uint_at(size_t k) const {
  check_element(k, "uint_at");
  const GgufValue v = unpack_scalar(raw_, elem_type, k);
  if (elem_type == GgufType::kBool) return v.u;
  const auto u = v.as_uint64();
  if (!gguf_is_integer(elem_type) || !u)
    throw Error("gguf: uint_at(" + std::to_string(k) + ") on an " + type_name() +
                (gguf_is_integer(elem_type) ? " (negative value)" : ""));
  return *u;
}

double GgufValue::float_at(size_t k) const {
  check_element(k, "float_at");
  if (elem_type != GgufType::kFloat32 && elem_type != GgufType::kFloat64)
    throw Error("gguf: float_at on an " + type_name());
  return unpack_scalar(raw_, elem_type, k).f;
}

const GgufValue& GgufValue::nested_at(size_t k) const {
  check_element(k, "nested_at");
  if (elem_type != GgufType::kArray) throw Error("gguf: nested_at on an " + type_name());
  return nested_[k];
}

GgufValue GgufValue::element(size_t k) const {
  check_element(k, "element");
  if (elem_type == GgufType::kString) return string(std::string(string_at(k)));
  if (elem_type == GgufType::kArray) return nested_[k];
  return unpack_scalar(raw_, elem_type, k);
}

std::vector<GgufValue> GgufValue::elements() const {
  std::vector<GgufValue> out;
  const size_t n = array_size();
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) out.push_back(element(k));
  return out;
}

size_t GgufValue::held_bytes() const {
  size_t n = sizeof(GgufValue) + str.capacity() + raw_.capacity() + chars_.capacity() +
             ends_.capacity() * sizeof(uint64_t) +
             (nested_.capacity() - nested_.size()) * sizeof(GgufValue);
  for (const GgufValue& v : nested_) n += v.held_bytes();
  return n;
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
      // Float elements compare bitwise here (a NaN element equals itself).
      return elem_type == o.elem_type && raw_ == o.raw_ && chars_ == o.chars_ && ends_ == o.ends_ &&
             nested_ == o.nested_;
    case GgufType::kFloat32:
    case GgufType::kFloat64:
      return f == o.f || (f != f && o.f != o.f);
    default:
      return is_unsigned(type) || type == GgufType::kBool ? u == o.u : i == o.i;
  }
}

}  // namespace specd
