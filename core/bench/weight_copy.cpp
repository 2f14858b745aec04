#include "bench/weight_copy.hpp"

#include <vector>

#include "gguf/gguf_reader.hpp"
#include "gguf/gguf_writer.hpp"
#include "gguf/kquant_writer.hpp"

namespace specd::bench {
namespace {

// The tensor as f32 values, or false for a type this copy does not convert.
bool to_f32(const GgufTensor& t, std::vector<float>& out) {
  if (!ggml_decodable(t.type)) return false;
  out.resize(static_cast<size_t>(t.n_elements));
  dequantize_row(t.type, t.data, out.data(), t.n_elements);
  return true;
}

}  // namespace

size_t write_weight_copy(const std::string& in, const std::string& out, GgmlType type) {
  const GgufFile file = GgufFile::open(in);
  GgufWriter w;
  w.set_alignment(file.alignment());
  for (const auto& [key, value] : file.metadata()) {
    if (key == "general.alignment") continue;
    w.set(key, value);
  }
  if (file.has("general.file_type"))
    w.set_u32("general.file_type", type == GgmlType::kQ8_0   ? 7u
                                   : type == GgmlType::kQ4_K ? 15u
                                   : type == GgmlType::kF16  ? 1u
                                                             : 0u);
  const uint32_t n_layer = file.has("llama.block_count") ? file.get_u32("llama.block_count") : 0;
  size_t converted = 0;
  std::vector<float> values;
  for (const GgufTensor& t : file.tensors()) {
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    // Matrices only: norms and biases stay f32, as converters do.
    // kQ4_K stands for llama.cpp's Q4_K_M mix of q4_K and q6_K.
    const GgmlType want = type == GgmlType::kQ4_K ? q4_k_m_type(t.name, n_layer) : type;
    const bool fits = t.ne[0] % ggml_type_info(static_cast<uint32_t>(want))->block_size == 0;
    if (t.n_dims == 2 && t.type != want && fits && to_f32(t, values)) {
      w.add_tensor_f32(t.name, want, ne, values.data());
      ++converted;
    } else {
      const auto* bytes = static_cast<const uint8_t*>(t.data);
      w.add_tensor(t.name, t.type, ne, std::vector<uint8_t>(bytes, bytes + t.n_bytes));
    }
  }
  w.write(out);
  return converted;
}

}  // namespace specd::bench
