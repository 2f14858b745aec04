// Random-weight llama GGUF files for tests: llama.cpp's tensor names and metadata, with a
// byte-level tokenizer (two control tokens, then the 256 byte tokens). Nothing binary is
// committed; each test writes the files it needs.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/ggml_types.hpp"
#include "writers/llama_writer.hpp"

namespace specd::test {

// The layout's defaults: d 64, 2 layers, 4 heads (2 KV), FFN 128, context 256, and a vocab
// of 264 (the 258 byte-tokenizer entries, then 6 padding tokens). An empty name becomes
// "random-llama-<seed>".
struct RandomLlamaSpec : LlamaLayout {
  GgmlType weight_type = GgmlType::kF16;
  uint64_t seed = 1;
  float weight_scale = 0.08f;  // std of the matrices; large enough for varied argmaxes
};

// Writes the model to `path` and returns its vocabulary size.
uint32_t write_random_llama(const std::string& path, const RandomLlamaSpec& spec);

// A temporary folder for one test, named after it and the process; removed with what it
// holds when the test process exits (SPECD_TEST_KEEP_TEMP=1 keeps it).
std::string temp_dir(const std::string& name);

}  // namespace specd::test
