// Resources a file can ask for: the real CLI under an address-space limit (ulimit -v), so
// that an allocation too large for the machine fails the same way everywhere (not only where
// the kernel refuses to overcommit). Skipped in sanitizer builds, whose shadow memory needs
// more address space than any such limit allows.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "gguf/gguf_reader.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"
#include "writers/gguf_writer.hpp"

using specd::test::CliResult;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// `specd ARGS` with at most `kib` KiB of address space.
CliResult run_limited(uint64_t kib, const std::vector<std::string>& args) {
  std::string line = "ulimit -v " + std::to_string(kib) + " && exec '" + SPECD_CLI + "'";
  for (const std::string& a : args) line += " '" + a + "'";
  return specd::test::run_program({"/bin/sh", "-c", line});
}

constexpr uint64_t kLimitKiB = 4ull << 20;  // 4 GiB: far above what these runs use

}  // namespace

TEST_CASE(
    "a KV cache too large to allocate names the model, [engine] context and a size that fits") {
  if (SPECD_SANITIZED) {
    ::specd::test::skip_here("sanitizer builds cannot run under an address-space limit");
    return;
  }
  const std::string dir = specd::test::temp_dir("kv-too-large");
  const std::string model = dir + "/huge-context.gguf";
  specd::test::RandomLlamaSpec spec;
  spec.n_ctx = 1u << 30;  // 512 bytes of KV per token: 512 GiB in all
  specd::test::write_random_llama(model, spec);
  const std::string config = dir + "/run.toml";
  std::ofstream(config) << "[target]\nmodel = \"" << model
                        << "\"\n[engine]\nbackend = \"cpu\"\nthreads = 1\n";

  const CliResult r = run_limited(kLimitKiB, {"run", "-c", config, "-p", "hi", "-n", "2"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 1);
  CHECK(contains(r.err, model));
  CHECK(contains(r.err, "[engine] context"));
  CHECK(contains(r.err, "1073741824 tokens"));
  CHECK(contains(r.err, "needs 554050781184 bytes, 516 per token"));
  CHECK(contains(r.err, "cannot allocate 137438953472 bytes"));  // the cause: one K buffer
  CHECK(contains(r.err, "context = 4096 needs 2113536 bytes"));

  // Set explicitly, the message points at the line that set it.
  std::ofstream(config, std::ios::app) << "context = 16000000\n";
  const CliResult set = run_limited(kLimitKiB, {"run", "-c", config, "-p", "hi", "-n", "2"});
  INFO("stderr: " << set.err);
  CHECK(set.status == 1);
  CHECK(contains(set.err, "16000000 tokens ([engine] context = 16000000 at " + config + ":6:"));

  // A context that fits runs under the same limit.
  const CliResult fits = run_limited(
      kLimitKiB, {"run", "-c", config, "-p", "hi", "-n", "2", "--set", "engine.context=4096"});
  INFO("stderr: " << fits.err);
  CHECK(fits.status == 0);
}

TEST_CASE("a model with a 24 MB metadata array runs in a small multiple of its size") {
  if (SPECD_SANITIZED) {
    ::specd::test::skip_here("sanitizer builds cannot run under an address-space limit");
    return;
  }
  // 24 M one-byte elements: held as one value each (about 100 bytes) that is 2.4 GB per
  // parse, packed it is 24 MB.
  const std::string dir = specd::test::temp_dir("big-metadata");
  const std::string plain = dir + "/plain.gguf", model = dir + "/big-metadata.gguf";
  specd::test::write_random_llama(plain, {});
  {
    const specd::GgufFile f = specd::GgufFile::open(plain);
    specd::GgufWriter w;
    for (const auto& [key, value] : f.metadata())
      if (key != "general.alignment") w.set(key, value);
    specd::GgufValue blob = specd::GgufValue::empty_array(specd::GgufType::kUint8);
    const std::vector<uint8_t> bytes(24u << 20, 7);
    blob.append_packed(bytes.data(), bytes.size());
    w.set("specd.test.blob", blob);
    for (const specd::GgufTensor& t : f.tensors()) {
      const auto* data = static_cast<const uint8_t*>(t.data);
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                   std::vector<uint8_t>(data, data + t.n_bytes));
    }
    w.write(model);
  }
  const std::string config = dir + "/run.toml";
  std::ofstream(config) << "[target]\nmodel = \"" << model
                        << "\"\n[engine]\nbackend = \"cpu\"\nthreads = 1\n";
  const CliResult r = run_limited(1ull << 20, {"run", "-c", config, "-p", "hi", "-n", "2"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
}
