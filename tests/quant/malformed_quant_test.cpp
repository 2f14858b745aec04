// Quantized tensors that cannot be read are refused at load, naming the file, the tensor
// and the type: a type specd does not decode (q8_1), a row that is not a whole number of
// the type's blocks, tensor data shorter than the type requires, and a norm vector stored
// quantized. Each case is a copy of a llama.cpp preset file with one tensor altered.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "compat_dir.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "gguf/gguf_reader.hpp"
#include "plugin/registry.hpp"
#include "test_paths.hpp"
#include "writers/gguf_writer.hpp"

using namespace specd;

namespace {

std::string out_dir() {
  const std::string dir = std::string(SPECD_BINARY_DIR) + "/test-fixtures/quant";
  std::filesystem::create_directories(dir);
  return dir;
}

// A copy of `in` where tensor `name` gets `type`, `ne` and `bytes`.
void write_altered(const std::string& in, const std::string& out, const std::string& name,
                   GgmlType type, std::vector<int64_t> ne, const std::vector<uint8_t>& bytes) {
  const GgufFile file = GgufFile::open(in);
  GgufWriter w;
  w.set_alignment(file.alignment());
  for (const auto& [key, value] : file.metadata())
    if (key != "general.alignment") w.set(key, value);
  for (const GgufTensor& t : file.tensors()) {
    if (t.name == name) {
      w.add_tensor(t.name, type, ne, bytes);
    } else {
      const auto* b = static_cast<const uint8_t*>(t.data);
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                   std::vector<uint8_t>(b, b + t.n_bytes));
    }
  }
  w.write(out);
}

// The message of loading `model` as a target, or "" if it loads.
std::string load_error(const std::string& model) {
  PluginRegistry registry({std::string(SPECD_BINARY_DIR) + "/bin/plugins"});
  try {
    Engine e(
        parse_config("", "test.toml",
                     {"target.model=\"" + model + "\"", "engine.backend=cpu", "engine.threads=1"}),
        registry);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

void check_names(const std::string& msg, const std::string& file, const std::string& tensor,
                 const std::string& type) {
  INFO("error: " << msg);
  CHECK(msg.find(file) != std::string::npos);
  CHECK(msg.find("'" + tensor + "'") != std::string::npos);
  CHECK(msg.find(type) != std::string::npos);
}

// Overwrites the u32 type id of tensor `name` in a written GGUF file's tensor infos (the
// name is followed by n_dims, ne[n_dims] and the type).
void patch_type(const std::string& path, const std::string& name, uint32_t type) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t at = bytes.find(name);
  REQUIRE(at != std::string::npos);
  at += name.size();
  uint32_t n_dims;
  std::memcpy(&n_dims, bytes.data() + at, 4);
  f.clear();
  f.seekp(static_cast<std::streamoff>(at + 4 + 8 * n_dims));
  f.write(reinterpret_cast<const char*>(&type), 4);
}

const char* const kTensor = "blk.0.attn_q.weight";  // [256, 256] q4_K in Q4_K_M.gguf

// Q4_K_M.gguf with tensor `name` given `type`, `ne` and `n_bytes` zero bytes, written to
// `file` in out_dir(); returns its path.
std::string altered_preset(const std::string& file, const std::string& name, GgmlType type,
                           std::vector<int64_t> ne, size_t n_bytes) {
  const std::string out = out_dir() + "/" + file;
  write_altered(test::quant_compat_dir() + "/Q4_K_M.gguf", out, name, type, std::move(ne),
                std::vector<uint8_t>(n_bytes, 0));
  return out;
}

// The error of loading `model`, checked to name the file, `tensor` and `type`.
std::string refusal_naming(const std::string& model, const std::string& tensor,
                           const std::string& type) {
  const std::string msg = load_error(model);
  check_names(msg, model, tensor, type);
  return msg;
}

}  // namespace

TEST_CASE("a quantized type specd does not decode is refused naming file, tensor and type" *
          SPECD_MAY_SKIP) {
  if (!test::have_quant_compat()) return;
  const std::string out =
      altered_preset("q8_1.gguf", kTensor, GgmlType::kQ8_1, {256, 256}, 256 / 32 * 36 * 256);
  const std::string msg = refusal_naming(out, kTensor, "q8_1");
  CHECK(msg.find("supported") != std::string::npos);
}

TEST_CASE("a row that is not a whole number of blocks is refused naming file, tensor, type" *
          SPECD_MAY_SKIP) {
  if (!test::have_quant_compat()) return;
  // Written as q4_0 rows of 224 (7 blocks of 32), then relabelled q4_K (blocks of 256).
  const std::string out = altered_preset("partial-block.gguf", kTensor, GgmlType::kQ4_0, {224, 256},
                                         224 / 32 * 18 * 256);
  patch_type(out, kTensor, static_cast<uint32_t>(GgmlType::kQ4_K));
  const std::string msg = refusal_naming(out, kTensor, "q4_K");
  CHECK(msg.find("block size 256") != std::string::npos);
}

TEST_CASE("tensor data shorter than its type requires is refused naming file, tensor, type" *
          SPECD_MAY_SKIP) {
  if (!test::have_quant_compat()) return;
  const std::string in = test::quant_compat_dir() + "/Q4_K_M.gguf";
  const std::string out = out_dir() + "/truncated.gguf";
  std::filesystem::copy_file(in, out, std::filesystem::copy_options::overwrite_existing);
  // The last tensor in the data section loses its final block.
  const GgufFile f = GgufFile::open(in);
  const GgufTensor* last = &f.tensors().front();
  for (const GgufTensor& t : f.tensors())
    if (t.offset > last->offset) last = &t;
  const auto info = ggml_type_info(static_cast<uint32_t>(last->type));
  REQUIRE(info.has_value());
  const uint64_t end = f.data_offset() + last->offset + last->n_bytes;
  std::filesystem::resize_file(out, end - info->type_size);
  refusal_naming(out, last->name, ggml_type_name(last->type));
}

TEST_CASE("a norm vector stored quantized is refused naming file, tensor and type" *
          SPECD_MAY_SKIP) {
  if (!test::have_quant_compat()) return;
  const std::string out = altered_preset("quantized-norm.gguf", "blk.0.attn_norm.weight",
                                         GgmlType::kQ8_0, {256}, 256 / 32 * 34);
  refusal_naming(out, "blk.0.attn_norm.weight", "q8_0");
}
