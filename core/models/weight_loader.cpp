#include "models/weight_loader.hpp"

#include <cstring>

#include "common/error.hpp"
#include "gguf/ggml_types.hpp"

namespace specd {
namespace {

std::string shape_str(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

constexpr const char* kSupportedTypes =
    "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, "
    "mxfp4";

}  // namespace

const GgufTensor& WeightLoader::require(const std::string& name, std::vector<int64_t> ne) {
  const GgufTensor& t = file_.require_tensor(name);
  std::vector<int64_t> got(t.ne.begin(), t.ne.begin() + t.n_dims);
  while (got.size() > 1 && got.back() == 1) got.pop_back();  // trailing 1s are not dimensions
  while (ne.size() > 1 && ne.back() == 1) ne.pop_back();
  if (got != ne)
    throw Error(file_.path() + ": tensor '" + name + "' has shape " + shape_str(got) +
                ", expected " + shape_str(ne) + " (ne, fastest first)");
  loaded_.insert(name);
  n_params_ += t.n_elements;
  return t;
}

View WeightLoader::matrix(const std::string& name, int64_t cols, int64_t rows) {
  return rows_of(name, {cols, rows}, cols, rows);
}

View WeightLoader::experts(const std::string& name, int64_t cols, int64_t rows, int64_t n) {
  return rows_of(name, {cols, rows, n}, cols, rows * n);
}

View WeightLoader::rows_of(const std::string& name, std::vector<int64_t> ne, int64_t cols,
                           int64_t rows) {
  const GgufTensor& t = require(name, std::move(ne));
  if (!ggml_decodable(t.type))
    throw Error(file_.path() + ": tensor '" + name + "' has type " + ggml_type_name(t.type) +
                "; supported: " + kSupportedTypes);
  const auto info = ggml_type_info(static_cast<uint32_t>(t.type));
  if (cols % info->block_size != 0)
    throw Error(file_.path() + ": tensor '" + name + "' (" + ggml_type_name(t.type) + "): row of " +
                std::to_string(cols) + " values is not a multiple of the block size " +
                std::to_string(info->block_size));
  const size_t need = ggml_row_size(t.type, cols) * static_cast<size_t>(rows);
  if (t.n_bytes < need)
    throw Error(file_.path() + ": tensor '" + name + "' (" + ggml_type_name(t.type) + ") holds " +
                std::to_string(t.n_bytes) + " bytes, " + std::to_string(need) + " needed");
  // Dtype ids are ggml type ids (backend.h): the file's bytes are handed over unchanged.
  const auto dt = static_cast<specd_dtype>(t.type);
  bool copied = false;
  Buffer b = device_.wrap_weights(t.data, need, dt, rows, cols, copied);
  if (copied) file_.drop_pages(t.data, need);
  View view = b.view(dt, rows, cols);
  buffers_.push_back(std::move(b));
  return view;
}

View WeightLoader::to_f32(const GgufTensor& t, int64_t rows, int64_t n, const char* what,
                          std::vector<float>* values) {
  std::vector<float> v(static_cast<size_t>(n));
  if (t.type == GgmlType::kF32) {
    std::memcpy(v.data(), t.data, v.size() * 4);
  } else if (t.type == GgmlType::kF16 || t.type == GgmlType::kBF16) {
    const auto* h = static_cast<const uint16_t*>(t.data);
    for (int64_t i = 0; i < n; ++i)
      v[i] = t.type == GgmlType::kF16 ? f16_to_f32(h[i]) : bf16_to_f32(h[i]);
  } else {
    throw Error(file_.path() + ": tensor '" + t.name + "' has type " + ggml_type_name(t.type) +
                "; " + what + " must be f32, f16 or bf16");
  }
  Buffer b = device_.alloc(v.size() * 4);
  b.upload(v.data(), v.size() * 4);
  View view = b.view(SPECD_DTYPE_F32, rows, n / rows);
  buffers_.push_back(std::move(b));
  if (values) *values = std::move(v);
  return view;
}

View WeightLoader::vector(const std::string& name, int64_t n, std::vector<float>* values) {
  return to_f32(require(name, {n}), 1, n, "1-D tensors (norms, biases, rope factors)", values);
}

View WeightLoader::small_matrix(const std::string& name, int64_t cols, int64_t rows,
                                const char* what) {
  return to_f32(require(name, {cols, rows}), rows, cols * rows, what, nullptr);
}

void WeightLoader::refuse_unread(const std::string& reader) const {
  for (const GgufTensor& t : file_.tensors())
    if (!loaded_.count(t.name))
      throw Error(file_.path() + ": tensor '" + t.name + "' is not used by " + reader);
}

}  // namespace specd
