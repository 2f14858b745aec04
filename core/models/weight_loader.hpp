// Puts GGUF tensors of a model, a head or the target a head is bound to on a device,
// checking each tensor's presence, shape and type: matrices are wrapped in place
// (f32/f16/bf16 and every block type of ggml_blocks.hpp; copied to the device when it cannot
// read host memory or keeps its own layout, buffer_wrap_weights, and then the file's pages
// are dropped), vectors (norm weights, biases) converted to f32 [1, n]. It remembers what it
// loaded, so a loader can refuse a file with tensors it never read.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "backend/backend.hpp"
#include "gguf/gguf_reader.hpp"

namespace specd {

class WeightLoader {
 public:
  // `file` and `device` must outlive the views; the buffers are appended to `buffers`.
  WeightLoader(const GgufFile& file, Device& device, std::vector<Buffer>& buffers)
      : file_(file), device_(device), buffers_(buffers) {}

  // A matrix of ne = [cols, rows] (fastest first): a [rows, cols] view. Throws specd::Error
  // naming the file and tensor on a missing tensor, wrong shape or unsupported type.
  View matrix(const std::string& name, int64_t cols, int64_t rows);
  // A mixture-of-experts tensor of ne = [cols, rows, n] (n matrices of [rows, cols], llama.cpp's
  // *_exps): one [n rows, cols] view, matrix i its rows [i rows, (i + 1) rows).
  View experts(const std::string& name, int64_t cols, int64_t rows, int64_t n);
  // A vector of n elements: an f32 [1, n] view; `values` (optional) receives them in f32.
  View vector(const std::string& name, int64_t n, std::vector<float>* values = nullptr);
  // A small matrix (a convolution kernel, the experts' biases) of ne = [cols, rows] stored f32,
  // f16 or bf16: an f32 [rows, cols] copy; `what` names the kind in the message for another type.
  View small_matrix(const std::string& name, int64_t cols, int64_t rows, const char* what);

  // Whether the file has a tensor of that name (loaded or not).
  bool has(const std::string& name) const { return file_.tensor(name) != nullptr; }
  // Counts a tensor the caller reads itself (not a weight: an index table) as used.
  void mark_read(const std::string& name) { loaded_.insert(name); }
  bool was_read(const std::string& name) const { return loaded_.count(name) > 0; }

  // The total number of elements of the tensors loaded so far.
  int64_t n_params() const { return n_params_; }
  // Throws "<file>: tensor '<name>' is not used by <reader>" for the first tensor of the
  // file that was never loaded: a file whose tensors disagree with its metadata (a wrong
  // block or head count) or that needs a feature the reader lacks must not load as if
  // those tensors were not there.
  void refuse_unread(const std::string& reader) const;

 private:
  const GgufTensor& require(const std::string& name, std::vector<int64_t> ne);
  // A quantizable matrix of `rows` rows of `cols` values whose ne is `ne`.
  View rows_of(const std::string& name, std::vector<int64_t> ne, int64_t cols, int64_t rows);
  // The tensor's n values as f32 on the device, [rows, n / rows]; `what` names the kind of
  // tensor in the message for another type.
  View to_f32(const GgufTensor& t, int64_t rows, int64_t n, const char* what,
              std::vector<float>* values);
  const GgufFile& file_;
  Device& device_;
  std::vector<Buffer>& buffers_;
  std::unordered_set<std::string> loaded_;
  int64_t n_params_ = 0;
};

}  // namespace specd
