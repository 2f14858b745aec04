// Random-weight llama GGUF files for tests: llama.cpp's tensor names and metadata, with a
// byte-level tokenizer (two control tokens, then the 256 byte tokens). Nothing binary is
// committed; each test writes the files it needs.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/ggml_types.hpp"

namespace specd::test {

struct RandomLlamaSpec {
  uint32_t n_embd = 64;
  uint32_t n_layer = 2;
  uint32_t n_head = 4;
  uint32_t n_head_kv = 2;
  uint32_t n_ff = 128;
  uint32_t n_ctx = 256;
  uint32_t extra_vocab = 6;  // padding tokens after the 258 real ones
  bool tied_output = false;
  GgmlType weight_type = GgmlType::kF16;
  uint64_t seed = 1;
  float weight_scale = 0.08f;  // std of the matrices; large enough for varied argmaxes
};

// Writes the model to `path` and returns its vocabulary size.
uint32_t write_random_llama(const std::string& path, const RandomLlamaSpec& spec);

// A fresh temporary folder for one test (removed by the OS, not by the test).
std::string temp_dir(const std::string& name);

}  // namespace specd::test
