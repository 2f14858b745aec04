#include "gguf/gguf_reader.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>

#include "common/error.hpp"
#include "gguf/gguf_format.hpp"

namespace specd {

bool is_gguf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

// Bounds-checked little-endian cursor over the mapping; every read names the path on failure.
class GgufParser {
 public:
  GgufParser(GgufFile& file, const uint8_t* data, size_t size)
      : file_(file), data_(data), size_(size) {}

  void parse();

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(file_.path_ + ": " + what); }
  size_t remaining() const { return size_ - pos_; }

  void need(size_t n, const char* what) const {
    if (n > remaining()) {
      fail(std::string("truncated while reading ") + what + " at offset " + std::to_string(pos_) +
           " (need " + std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left)");
    }
  }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));  // host is little-endian (checked below)
    pos_ += sizeof(T);
    return v;
  }

  // Rejects a count before anything is allocated for it: each element needs at least
  // min_bytes, so a count larger than remaining / min_bytes cannot be genuine.
  void check_count(uint64_t count, size_t min_bytes, const std::string& what) const {
    if (min_bytes > 0 && count > remaining() / min_bytes) {
      fail(what + " count " + std::to_string(count) + " cannot fit in the remaining " +
           std::to_string(remaining()) + " bytes");
    }
  }

  std::string read_string(const char* what) {
    const auto len = read<uint64_t>(what);
    if (len > remaining()) {
      fail(std::string(what) + " length " + std::to_string(len) + " at offset " +
           std::to_string(pos_ - 8) + " exceeds the remaining " + std::to_string(remaining()) +
           " bytes");
    }
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

  GgufType read_type(const std::string& context) {
    const auto t = read<uint32_t>("value type");
    if (t >= kGgufTypeCount) fail(context + " has unknown value type " + std::to_string(t));
    return static_cast<GgufType>(t);
  }

  static size_t min_value_bytes(GgufType t) {
    if (t == GgufType::kString) return 8;
    if (t == GgufType::kArray) return 12;
    return gguf_scalar_size(t);
  }

  GgufValue read_value(GgufType type, const std::string& context, uint32_t depth);

  // Parsed metadata and tensor infos may hold at most this many bytes: a small multiple of
  // the file, so that a small file cannot make the reader exhaust memory.
  size_t budget() const { return 4 * size_ + (1u << 20); }
  void charge(size_t bytes, const std::string& context) {
    held_ += bytes;
    if (held_ > budget()) {
      fail(context + ": the metadata would take more than " + std::to_string(budget()) +
           " bytes of memory (4 times the file size plus 1 MiB); refusing the file");
    }
  }

  GgufFile& file_;
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  size_t held_ = 0;  // bytes charged so far (GgufFile::held_bytes)
};

GgufValue GgufParser::read_value(GgufType type, const std::string& context, uint32_t depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::kUint8:
      v.u = read<uint8_t>("uint8 value");
      break;
    case GgufType::kInt8:
      v.i = read<int8_t>("int8 value");
      break;
    case GgufType::kUint16:
      v.u = read<uint16_t>("uint16 value");
      break;
    case GgufType::kInt16:
      v.i = read<int16_t>("int16 value");
      break;
    case GgufType::kUint32:
      v.u = read<uint32_t>("uint32 value");
      break;
    case GgufType::kInt32:
      v.i = read<int32_t>("int32 value");
      break;
    case GgufType::kUint64:
      v.u = read<uint64_t>("uint64 value");
      break;
    case GgufType::kInt64:
      v.i = read<int64_t>("int64 value");
      break;
    case GgufType::kFloat32:
      v.f = read<float>("float32 value");
      break;
    case GgufType::kFloat64:
      v.f = read<double>("float64 value");
      break;
    case GgufType::kBool: {
      const auto b = read<uint8_t>("bool value");
      if (b > 1) fail(context + " has bool value " + std::to_string(b) + " (expected 0 or 1)");
      v.u = b;
      break;
    }
    case GgufType::kString:
      v.str = read_string("string value");
      break;
    case GgufType::kArray: {
      if (depth >= kGgufMaxArrayDepth) {
        fail(context + " nests arrays deeper than " + std::to_string(kGgufMaxArrayDepth));
      }
      const GgufType elem = read_type(context + " array element");
      v = GgufValue::empty_array(elem);
      const auto n = read<uint64_t>("array length");
      check_count(n, min_value_bytes(elem), context + " array");
      if (elem == GgufType::kString) {
        for (uint64_t k = 0; k < n; ++k) {
          const auto len = read<uint64_t>("string value");
          if (len > remaining()) {
            fail(context + " array string " + std::to_string(k) + " length " + std::to_string(len) +
                 " exceeds the remaining " + std::to_string(remaining()) + " bytes");
          }
          v.append_string(std::string_view(reinterpret_cast<const char*>(data_ + pos_),
                                           static_cast<size_t>(len)));
          pos_ += static_cast<size_t>(len);
        }
      } else if (elem == GgufType::kArray) {
        for (uint64_t k = 0; k < n; ++k) {
          // The one element kind that expands in memory: charge it as it comes.
          charge(sizeof(GgufValue), context);
          v.append_nested(read_value(elem, context, depth + 1));
        }
      } else {
        const size_t bytes = static_cast<size_t>(n) * gguf_scalar_size(elem);
        need(bytes, "array elements");
        if (elem == GgufType::kBool) {
          for (size_t k = 0; k < bytes; ++k)
            if (data_[pos_ + k] > 1)
              fail(context + " has bool value " + std::to_string(data_[pos_ + k]) + " at index " +
                   std::to_string(k) + " (expected 0 or 1)");
        }
        v.append_packed(data_ + pos_, bytes);
        pos_ += bytes;
      }
      break;
    }
  }
  return v;
}

void GgufParser::parse() {
  {
    const uint32_t probe = 1;
    uint8_t first;
    std::memcpy(&first, &probe, 1);
    if (first != 1) fail("GGUF reading needs a little-endian host");
  }
  if (size_ < 4) fail("too small to be a GGUF file (" + std::to_string(size_) + " bytes)");
  const auto magic = read<uint32_t>("magic");
  if (magic != kGgufMagic) fail("bad magic (not a GGUF file)");
  const auto version = read<uint32_t>("version");
  if (version != 2 && version != 3) {
    fail("unsupported GGUF version " + std::to_string(version) + " (supported: 2, 3)");
  }
  file_.version_ = version;
  const auto n_tensors = read<uint64_t>("tensor count");
  const auto n_kv = read<uint64_t>("metadata count");
  // Smallest key/value: empty key (8) + type (4) + uint8 (1).
  check_count(n_kv, 13, "metadata");
  // Smallest tensor info: empty name (8) + n_dims (4) + one ne (8) + type (4) + offset (8).
  check_count(n_tensors, 32, "tensor");

  // Counts are only bounded by the file size: reserve what a real file has, grow past it.
  file_.kv_.reserve(static_cast<size_t>(std::min<uint64_t>(n_kv, 1024)));
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = read_string("metadata key");
    const std::string context = "key '" + key + "'";
    const GgufType type = read_type(context);
    GgufValue value = read_value(type, context, 0);
    // The entry, its index node (about 64 bytes) and what the value holds.
    charge(sizeof(std::pair<std::string, GgufValue>) + 2 * key.capacity() + 64 +
               value.held_bytes() - sizeof(GgufValue),
           context);
    if (file_.kv_index_.count(key)) fail("duplicate metadata " + context);
    file_.kv_index_.emplace(key, file_.kv_.size());
    file_.kv_.emplace_back(std::move(key), std::move(value));
  }

  if (const GgufValue* a = file_.find(kGgufAlignmentKey)) {
    if (a->type != GgufType::kUint32) {
      fail(std::string(kGgufAlignmentKey) + " has type " + a->type_name() + ", expected uint32");
    }
    if (a->u == 0 || (a->u & (a->u - 1)) != 0) {
      fail(std::string(kGgufAlignmentKey) + " = " + std::to_string(a->u) +
           " is not a power of two");
    }
    file_.alignment_ = static_cast<uint32_t>(a->u);
  } else {
    file_.alignment_ = kGgufDefaultAlignment;
  }

  file_.tensors_.reserve(static_cast<size_t>(std::min<uint64_t>(n_tensors, 4096)));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensor t;
    t.name = read_string("tensor name");
    const std::string context = "tensor '" + t.name + "'";
    charge(sizeof(GgufTensor) + 2 * t.name.capacity() + 64, context);
    if (file_.tensor_index_.count(t.name)) fail("duplicate " + context);
    t.n_dims = read<uint32_t>("tensor n_dims");
    if (t.n_dims == 0 || t.n_dims > kGgufMaxDims) {
      fail(context + " has n_dims " + std::to_string(t.n_dims) + " (expected 1.." +
           std::to_string(kGgufMaxDims) + ")");
    }
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      const auto ne = read<int64_t>("tensor dimension");
      if (ne < 0)
        fail(context + " has negative ne[" + std::to_string(d) + "] = " + std::to_string(ne));
      t.ne[d] = ne;
    }
    const auto type_id = read<uint32_t>("tensor type");
    const auto info = ggml_type_info(type_id);
    if (!info) fail(context + " has unknown ggml type " + std::to_string(type_id));
    t.type = static_cast<GgmlType>(type_id);
    t.offset = read<uint64_t>("tensor offset");

    int64_t n = 1;
    for (int64_t ne : t.ne) {
      if (ne != 0 && n > std::numeric_limits<int64_t>::max() / ne) {
        fail(context + " element count overflows (ne = " + std::to_string(t.ne[0]) + ", " +
             std::to_string(t.ne[1]) + ", " + std::to_string(t.ne[2]) + ", " +
             std::to_string(t.ne[3]) + ")");
      }
      n *= ne;
    }
    t.n_elements = n;
    if (t.ne[0] % info->block_size != 0) {
      fail(context + " ne[0] = " + std::to_string(t.ne[0]) + " is not a multiple of the " +
           info->name + " block size " + std::to_string(info->block_size));
    }
    const auto blocks = static_cast<uint64_t>(n / info->block_size);
    if (blocks > std::numeric_limits<size_t>::max() / info->type_size) {
      fail(context + " byte size overflows");
    }
    t.n_bytes = static_cast<size_t>(blocks * info->type_size);
    if (t.offset % file_.alignment_ != 0) {
      fail(context + " offset " + std::to_string(t.offset) +
           " is not a multiple of the alignment " + std::to_string(file_.alignment_));
    }
    file_.tensor_index_.emplace(t.name, file_.tensors_.size());
    file_.tensors_.push_back(std::move(t));
  }

  const uint64_t align = file_.alignment_;
  const uint64_t data_start = (static_cast<uint64_t>(pos_) + align - 1) / align * align;
  file_.data_offset_ = data_start;
  if (!file_.tensors_.empty() && data_start > size_) {
    fail("data section would start at offset " + std::to_string(data_start) +
         " past the end of the file (" + std::to_string(size_) + " bytes)");
  }
  const uint64_t data_size = data_start <= size_ ? size_ - data_start : 0;
  for (auto& t : file_.tensors_) {
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      fail("tensor '" + t.name + "' (" + ggml_type_name(t.type) + ") data [" +
           std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
           ") lies outside the data section of " + std::to_string(data_size) + " bytes");
    }
    t.data = data_ + data_start + t.offset;
  }

  file_.held_bytes_ = held_;

  std::vector<const GgufTensor*> by_offset;
  by_offset.reserve(file_.tensors_.size());
  for (const auto& t : file_.tensors_) {
    if (t.n_bytes > 0) by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const GgufTensor& prev = *by_offset[k - 1];
    if (prev.offset + prev.n_bytes > by_offset[k]->offset) {
      fail("tensors '" + prev.name + "' and '" + by_offset[k]->name + "' overlap");
    }
  }
}

GgufFile GgufFile::open(const std::string& path) {
  GgufFile file;
  file.path_ = path;
  file.map_ = std::make_shared<MappedFile>(MappedFile::open(path));
  try {
    GgufParser(file, file.map_->data(), file.map_->size()).parse();
  } catch (const std::bad_alloc&) {
    // Counts are bounded by the file size, but metadata still expands in memory.
    throw Error(path + ": out of memory while reading the metadata");
  }
  return file;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufValue& GgufFile::require(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) throw Error(path_ + ": missing metadata key '" + std::string(key) + "'");
  return *v;
}

void GgufFile::type_error(std::string_view key, const GgufValue& v,
                          const std::string& expected) const {
  throw Error(path_ + ": key '" + std::string(key) + "' has type " + v.type_name() + ", expected " +
              expected);
}

int64_t GgufFile::integer_in_range(std::string_view key, const GgufValue& v, int64_t lo, int64_t hi,
                                   const char* expected) const {
  if (!v.is_integer()) type_error(key, v, expected);
  const auto s = v.as_int64();
  if (!s || *s < lo || *s > hi) {
    const std::string shown = v.as_uint64() ? std::to_string(*v.as_uint64()) : std::to_string(v.i);
    throw Error(path_ + ": key '" + std::string(key) + "' value " + shown + " does not fit in " +
                expected);
  }
  return *s;
}

const std::string& GgufFile::get_string(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufType::kString) type_error(key, v, "string");
  return v.str;
}

uint32_t GgufFile::get_u32(std::string_view key) const {
  return static_cast<uint32_t>(
      integer_in_range(key, require(key), 0, std::numeric_limits<uint32_t>::max(), "uint32"));
}

int32_t GgufFile::get_i32(std::string_view key) const {
  return static_cast<int32_t>(integer_in_range(key, require(key),
                                               std::numeric_limits<int32_t>::min(),
                                               std::numeric_limits<int32_t>::max(), "int32"));
}

uint64_t GgufFile::get_u64(std::string_view key) const {
  const GgufValue& v = require(key);
  if (!v.is_integer()) type_error(key, v, "uint64");
  const auto u = v.as_uint64();
  if (!u) {
    throw Error(path_ + ": key '" + std::string(key) + "' value " + std::to_string(v.i) +
                " does not fit in uint64");
  }
  return *u;
}

int64_t GgufFile::get_i64(std::string_view key) const {
  return integer_in_range(key, require(key), std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max(), "int64");
}

float GgufFile::get_f32(std::string_view key) const {
  const GgufValue& v = require(key);
  if (!v.is_float()) type_error(key, v, "float32");
  return static_cast<float>(v.f);
}

double GgufFile::get_f64(std::string_view key) const {
  const GgufValue& v = require(key);
  if (!v.is_float()) type_error(key, v, "float64");
  return v.f;
}

bool GgufFile::get_bool(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufType::kBool) type_error(key, v, "bool");
  return v.u != 0;
}

const GgufValue& GgufFile::get_array(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufType::kArray) type_error(key, v, "array");
  return v;
}

const GgufValue& GgufFile::get_array(std::string_view key, GgufType elem) const {
  const GgufValue& v = require(key);
  if (v.type != GgufType::kArray || v.elem_type != elem) {
    type_error(key, v, "array[" + gguf_type_name(elem) + "]");
  }
  return v;
}

std::optional<std::string> GgufFile::get_string_opt(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_string(key);
}
std::optional<uint32_t> GgufFile::get_u32_opt(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_u32(key);
}
std::optional<int32_t> GgufFile::get_i32_opt(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_i32(key);
}
std::optional<uint64_t> GgufFile::get_u64_opt(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_u64(key);
}
std::optional<int64_t> GgufFile::get_i64_opt(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_i64(key);
}
std::optional<float> GgufFile::get_f32_opt(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_f32(key);
}
std::optional<bool> GgufFile::get_bool_opt(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_bool(key);
}
const GgufValue* GgufFile::get_array_opt(std::string_view key, GgufType elem) const {
  if (!has(key)) return nullptr;
  return &get_array(key, elem);
}

const GgufTensor* GgufFile::tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::require_tensor(std::string_view name) const {
  const GgufTensor* t = tensor(name);
  if (!t) throw Error(path_ + ": missing tensor '" + std::string(name) + "'");
  return *t;
}

}  // namespace specd
