// Each architecture layout of ../shared/compat/arch (llama, llama-tied, llama-rope-freqs,
// qwen2, qwen3: small f32 files made with llama.cpp) through specd's engine: the greedy
// continuation of every prompt of reference.json (24 tokens, EOS ignored, BOS added as the
// file says) must equal llama.cpp's text exactly. $SPECD_TEST_BACKEND picks another backend
// than cpu (e.g. cuda on a GPU machine, or gpu-emulator with SPECD_GPU_EMULATOR=1).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../bench/json_parse.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine_config.hpp"
#include "plugin/registry.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"

using namespace specd;

namespace {

std::string compat_dir() {
  return std::string(SPECD_SOURCE_DIR) + "/../shared/compat/arch";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Shows control characters and non-ASCII bytes, so a failing comparison is readable.
std::string visible(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("greedy continuations equal llama.cpp's for every architecture layout") {
  const std::string dir = compat_dir();
  if (!std::filesystem::exists(dir + "/reference.json")) {
    ::specd::test::skip_missing(dir, "/reference.json is not there (the shared compat data)");
    return;
  }
  const test::Json ref = test::JsonParser(read_file(dir + "/reference.json")).parse();
  const int n_predict = static_cast<int>(ref["n_predict"].n);
  PluginRegistry registry{{}};
  int files = 0;
  for (const auto& [file, cases] : ref["models"].o) {
    CAPTURE(file);
    const std::string path = dir + "/" + file;
    REQUIRE(std::filesystem::exists(path));
    const Config config = parse_config(
        "", "compat.toml",
        {"target.model=\"" + path + "\"", "engine.backend=\"" + test::test_backend() + "\"",
         "engine.threads=1", "sampling.temperature=0", "sampling.ignore_eos=true",
         "sampling.max_tokens=" + std::to_string(n_predict)});
    Engine engine(config, registry);
    for (const test::Json& c : cases.a) {
      const std::string& prompt = c["prompt"].s;
      const std::string& want = c["continuation"].s;
      CAPTURE(prompt);
      const GenerationResult out = engine.generate(prompt);
      CHECK(out.tokens.size() == static_cast<size_t>(n_predict));
      INFO("specd:     " << visible(out.text));
      INFO("llama.cpp: " << visible(want));
      CHECK(out.text == want);
    }
    ++files;
  }
  CHECK(files == 5);
}
