#include "writers/gguf_writer.hpp"

#include "writers/kquant_writer.hpp"
#include "writers/quant_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "common/error.hpp"
#include "common/file_io.hpp"
#include "gguf/gguf_format.hpp"

namespace specd {

namespace {

class ByteSink {
 public:
  template <typename T>
  void put(T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  void pad_to(size_t alignment) {
    while (out.size() % alignment != 0) out.push_back(0);
  }
  std::vector<uint8_t> out;
};

void put_value(ByteSink& sink, const GgufValue& v) {
  switch (v.type) {
    case GgufType::kUint8:
      sink.put(static_cast<uint8_t>(v.u));
      break;
    case GgufType::kInt8:
      sink.put(static_cast<int8_t>(v.i));
      break;
    case GgufType::kUint16:
      sink.put(static_cast<uint16_t>(v.u));
      break;
    case GgufType::kInt16:
      sink.put(static_cast<int16_t>(v.i));
      break;
    case GgufType::kUint32:
      sink.put(static_cast<uint32_t>(v.u));
      break;
    case GgufType::kInt32:
      sink.put(static_cast<int32_t>(v.i));
      break;
    case GgufType::kUint64:
      sink.put(static_cast<uint64_t>(v.u));
      break;
    case GgufType::kInt64:
      sink.put(static_cast<int64_t>(v.i));
      break;
    case GgufType::kFloat32:
      sink.put(static_cast<float>(v.f));
      break;
    case GgufType::kFloat64:
      sink.put(v.f);
      break;
    case GgufType::kBool:
      sink.put(static_cast<uint8_t>(v.u != 0));
      break;
    case GgufType::kString:
      sink.put_string(v.str);
      break;
    case GgufType::kArray: {
      sink.put(static_cast<uint32_t>(v.elem_type));
      const size_t n = v.array_size();
      sink.put<uint64_t>(n);
      if (v.elem_type == GgufType::kString) {
        for (size_t k = 0; k < n; ++k) sink.put_string(v.string_at(k));
      } else if (v.elem_type == GgufType::kArray) {
        for (size_t k = 0; k < n; ++k) put_value(sink, v.nested_at(k));
      } else {
        sink.out.insert(sink.out.end(), v.packed().begin(), v.packed().end());  // as on disk
      }
      break;
    }
  }
}

size_t tensor_bytes(const std::string& name, GgmlType type, const std::vector<int64_t>& ne) {
  if (ne.empty() || ne.size() > kGgufMaxDims) {
    throw Error("gguf writer: tensor '" + name + "' needs 1..4 dimensions");
  }
  int64_t rows = 1;
  for (size_t d = 1; d < ne.size(); ++d) rows *= ne[d];
  return ggml_row_size(type, ne[0]) * static_cast<size_t>(rows);
}

}  // namespace

void GgufWriter::erase(const std::string& key) {
  std::erase_if(kv_, [&](const auto& kv) { return kv.first == key; });
}

void GgufWriter::set(const std::string& key, GgufValue value) {
  if (key == kGgufAlignmentKey && value.type == GgufType::kUint32) {
    alignment_ = static_cast<uint32_t>(value.u);
  }
  for (auto& kv : kv_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  kv_.emplace_back(key, std::move(value));
}

void GgufWriter::set_alignment(uint32_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    throw Error("gguf writer: alignment " + std::to_string(alignment) + " is not a power of two");
  }
  set_u32(kGgufAlignmentKey, alignment);
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne,
                            std::vector<uint8_t> data) {
  const size_t expected = tensor_bytes(name, type, ne);
  if (data.size() != expected) {
    throw Error("gguf writer: tensor '" + name + "' has " + std::to_string(data.size()) +
                " bytes, expected " + std::to_string(expected));
  }
  for (const auto& t : tensors_) {
    if (t.name == name) throw Error("gguf writer: duplicate tensor '" + name + "'");
  }
  tensors_.push_back({name, type, std::move(ne), std::move(data)});
}

void GgufWriter::add_tensor_f32(const std::string& name, GgmlType type, std::vector<int64_t> ne,
                                const float* values) {
  const size_t bytes = tensor_bytes(name, type, ne);
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  std::vector<uint8_t> data(bytes);
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(data.data(), values, bytes);
      break;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      for (int64_t k = 0; k < n; ++k) {
        const uint16_t h = type == GgmlType::kF16 ? f32_to_f16(values[k]) : f32_to_bf16(values[k]);
        std::memcpy(data.data() + 2 * k, &h, 2);
      }
      break;
    case GgmlType::kQ8_0:
      quantize_q8_0(values, data.data(), n);
      break;
    case GgmlType::kQ4_K:
      quantize_q4_K(values, data.data(), n);
      break;
    case GgmlType::kQ6_K:
      quantize_q6_K(values, data.data(), n);
      break;
    default:
      if (!ggml_writable(type))
        throw Error(std::string("gguf writer: cannot convert f32 to ") + ggml_type_name(type) +
                    " for tensor '" + name + "'");
      quantize_values(type, values, data.data(), n);  // the other quantized types
  }
  add_tensor(name, type, std::move(ne), std::move(data));
}

std::vector<uint8_t> GgufWriter::serialize() const {
  ByteSink sink;
  sink.put<uint32_t>(kGgufMagic);
  sink.put<uint32_t>(3);
  sink.put<uint64_t>(tensors_.size());
  sink.put<uint64_t>(kv_.size());
  for (const auto& [key, value] : kv_) {
    sink.put_string(key);
    sink.put(static_cast<uint32_t>(value.type));
    put_value(sink, value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    sink.put_string(t.name);
    sink.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) sink.put<int64_t>(d);
    sink.put(static_cast<uint32_t>(t.type));
    sink.put<uint64_t>(offset);
    offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  sink.pad_to(alignment_);
  for (const auto& t : tensors_) {
    sink.out.insert(sink.out.end(), t.data.begin(), t.data.end());
    sink.pad_to(alignment_);
  }
  return std::move(sink.out);
}

void GgufWriter::write(const std::string& path) const {
  const std::vector<uint8_t> bytes = serialize();
  write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace specd
