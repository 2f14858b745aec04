#include "bench/weight_copy.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/error.hpp"
#include "gguf/gguf_reader.hpp"
#include "writers/gguf_writer.hpp"

namespace specd::bench {
namespace {

// The tensor as f32 values, or false for a type this copy does not convert.
bool to_f32(const GgufTensor& t, std::vector<float>& out) {
  if (!ggml_decodable(t.type)) return false;
  out.resize(static_cast<size_t>(t.n_elements));
  dequantize_row(t.type, t.data, out.data(), t.n_elements);
  return true;
}

uint32_t u32_or(const GgufFile& file, const std::string& key, uint32_t fallback) {
  return file.get_u32_opt(key).value_or(fallback);
}

}  // namespace

size_t write_weight_copy(const std::string& in, const std::string& out,
                         const WeightPreset& preset) {
  const GgufFile file = GgufFile::open(in);
  GgufWriter w;
  w.set_alignment(file.alignment());
  for (const auto& [key, value] : file.metadata()) {
    if (key == "general.alignment") continue;
    w.set(key, value);
  }
  if (file.has("general.file_type")) w.set_u32("general.file_type", preset.file_type);
  TensorShape shape;
  if (auto arch = file.get_string_opt("general.architecture")) {
    shape.n_layer = u32_or(file, *arch + ".block_count", 0);
    const uint32_t heads = u32_or(file, *arch + ".attention.head_count", 1);
    const uint32_t kv = u32_or(file, *arch + ".attention.head_count_kv", heads);
    shape.n_gqa = kv > 0 ? heads / kv : 1;
    shape.n_expert = u32_or(file, *arch + ".expert_count", 0);
  }
  size_t converted = 0;
  std::vector<float> values;
  for (const GgufTensor& t : file.tensors()) {
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    // Matrices and expert stacks only: norms, biases and the router stay as they are, as
    // llama-quantize leaves them.
    shape.row_length = t.ne[0];
    shape.n_dims = t.n_dims;
    const GgmlType want = preset_tensor_type(preset, t.name, shape);
    if (preset_converts(t.name, shape) && t.type != want && to_f32(t, values)) {
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

size_t write_weight_copy(const std::string& in, const std::string& out, GgmlType type) {
  const char* name = type == GgmlType::kQ4_K   ? "q4_K_M"
                     : type == GgmlType::kQ5_K ? "q5_K_M"
                     : type == GgmlType::kQ3_K ? "q3_K_M"
                                               : ggml_type_name(type);
  return write_weight_copy(in, out, weight_preset(name));
}

bool ensure_weight_copy(const std::string& in, const std::string& out, const WeightPreset& preset) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto size = fs::file_size(in, ec);
  if (ec) throw Error(in + ": cannot read the model to copy (" + ec.message() + ")");
  const auto mtime = fs::last_write_time(in, ec).time_since_epoch().count();
  const std::string side = out + ".spec";
  const std::string want = "weight-copy 1\nsource " + fs::absolute(in).string() + "\nsize " +
                           std::to_string(size) + "\nmtime " + std::to_string(mtime) + "\npreset " +
                           preset.name + "\n";
  if (fs::is_regular_file(out, ec) && fs::is_regular_file(side, ec)) {
    std::ifstream have_in(side, std::ios::binary);
    const std::string have((std::istreambuf_iterator<char>(have_in)),
                           std::istreambuf_iterator<char>());
    if (have == want) return false;
  }
  fs::remove(side, ec);  // no stale record while the copy is rewritten
  write_weight_copy(in, out, preset);
  std::ofstream record(side, std::ios::binary);
  record << want;
  if (!record.flush()) throw Error(side + ": cannot write the weight copy's record");
  return true;
}

std::string matrix_type_summary(const std::string& model) {
  const GgufFile file = GgufFile::open(model);
  std::vector<std::pair<std::string, int>> counts;
  for (const GgufTensor& t : file.tensors()) {
    if (t.n_dims < 2) continue;  // matrices and expert stacks
    const std::string name = ggml_type_name(t.type);
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == name; });
    if (it == counts.end())
      counts.emplace_back(name, 1);
    else
      ++it->second;
  }
  std::stable_sort(counts.begin(), counts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [name, n] : counts)
    out += (out.empty() ? "" : ", ") + name + " ×" + std::to_string(n);
  return out;
}

}  // namespace specd::bench
