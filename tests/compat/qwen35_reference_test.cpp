// Qwen3.5 (qwen35: gated DeltaNet layers, gated attention, an MTP layer) in llama.cpp's layout
// (tests/compat/qwen35, written by make_qwen35_reference.py with llama.cpp's gguf-py and
// quantized by its llama-quantize; qwen35_reference.json: what llama.cpp's server generated and
// drafted). Through specd's engine:
//   - f16: the greedy continuation of every prompt equals llama.cpp's, token for token;
//   - q8_0, q4_K_M: equal up to the first token where the two differ, and that happens only
//     where llama.cpp's top two log-probabilities are within kTie (8-bit activations are
//     rounded differently there: both are right);
//   - the file's own MTP layer ([proposer] kind = "mtp") drafts what llama.cpp's draft-mtp
//     drafts, round by round, and the output stays plain greedy decoding's.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../bench/json_parse.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine_config.hpp"
#include "llama_rounds.hpp"
#include "plugin/registry.hpp"
#include "test_paths.hpp"

using namespace specd;

namespace {

const std::string kDir = std::string(SPECD_SOURCE_DIR) + "/tests/compat/qwen35";
constexpr double kTie = 0.1;  // nats between llama.cpp's top two tokens

test::Json reference() {
  std::ifstream in(kDir + "/qwen35_reference.json", std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return test::JsonParser(s.str()).parse();
}

// Greedy on the CPU with two threads (the later override wins), then `extra`.
Config config(const std::string& file, const std::vector<std::string>& extra, int n_predict) {
  std::vector<std::string> all = {"engine.threads=2"};
  all.insert(all.end(), extra.begin(), extra.end());
  return test::greedy_config(kDir + "/" + file, all, n_predict, "cpu");
}

}  // namespace

TEST_CASE("qwen35 greedy continuations equal llama.cpp's (f16 exactly; quantized up to a tie)") {
  const test::Json ref = reference();
  const int n_predict = static_cast<int>(ref["n_predict"].n);
  PluginRegistry registry{{}};
  int files = 0;
  for (const auto& [file, cases] : ref["plain"].o) {
    CAPTURE(file);
    Engine engine(config(file, {}, n_predict), registry);
    const bool exact = file.find("f16") != std::string::npos;
    for (const test::Json& c : cases.a) {
      const std::string& prompt = c["prompt"].s;
      CAPTURE(prompt);
      const GenerationResult out = engine.generate(prompt);
      const std::vector<int32_t> theirs = test::ints(c["tokens"]);
      REQUIRE(out.stats.prompt_tokens == static_cast<uint64_t>(c["prompt_n"].n));
      REQUIRE(out.tokens.size() == theirs.size());
      if (exact) {
        CHECK(out.tokens == theirs);
        continue;
      }
      size_t same = 0;
      while (same < theirs.size() && out.tokens[same] == theirs[same]) ++same;
      if (same == theirs.size()) continue;
      const test::Json& top = c["top_logprobs"].a[same];
      const double margin = top.a[0].n - top.a[1].n;
      INFO("the paths part at token " << same << ", where llama.cpp's top two are " << margin
                                      << " nats apart");
      CHECK(margin < kTie);
    }
    ++files;
  }
  CHECK(files == 3);
}

TEST_CASE("a qwen35 file's MTP layer drafts what llama.cpp's draft-mtp drafts") {
  const test::Json ref = reference();
  const int n_predict = static_cast<int>(ref["n_predict"].n);
  const std::string k = std::to_string(static_cast<int>(ref["n_draft"].n));
  PluginRegistry registry{{}};
  for (const auto& [file, cases] : ref["mtp"].o) {
    CAPTURE(file);
    Engine plain(config(file, {}, n_predict), registry);
    Engine mtp(
        config(file, {"proposer.kind=\"mtp\"", "proposer.mode=\"greedy\"", "proposer.k=" + k},
               n_predict),
        registry);
    const auto [compared, llama_rounds] = test::compare_rounds(mtp, plain, cases);
    CHECK(compared * 10 >= llama_rounds * 8);
  }
}
