// Puts GGUF tensors of a head (or of the target it is bound to) on a device, checking each
// tensor's presence and shape: matrices are wrapped in place (f32/f16/bf16/q8_0), vectors
// (norm weights, biases) converted to f32 [1, n].
#pragma once

#include <cstdint>
#include <string>
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
  // A vector of n elements: an f32 [1, n] view.
  View vector(const std::string& name, int64_t n);

 private:
  const GgufTensor& require(const std::string& name, std::vector<int64_t> ne);
  const GgufFile& file_;
  Device& device_;
  std::vector<Buffer>& buffers_;
};

}  // namespace specd
