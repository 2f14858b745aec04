// llama.cpp's quantization presets through the engine: every preset file of
// ../shared/compat/quant loads and generates, greedy speculative decoding (each round one
// batched verification) gives the plain output token for token on every preset, and
// quantized target/draft pairs of different presets do the same through the draft-model
// proposer.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "compat_dir.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine_config.hpp"
#include "plugin/registry.hpp"
#include "test_paths.hpp"

using namespace specd;

namespace {

const char* const kPresets[] = {"Q2_K", "Q3_K_M", "Q4_0", "Q4_1", "Q4_K_M", "Q5_0",
                                "Q5_1", "Q5_K_M", "Q6_K", "Q8_0", "IQ4_NL", "IQ4_XS"};

Config make_config(const std::string& model, const std::vector<std::string>& overrides) {
  return test::greedy_config(model, overrides, 24);
}

std::string preset_path(const std::string& preset) {
  return test::quant_compat_dir() + "/" + preset + ".gguf";
}

const std::vector<std::string> kPrompts = {"def fibonacci(n):", "aaaa bbbb aaaa bbbb aaaa"};

}  // namespace

TEST_CASE("every llama.cpp preset generates, and greedy speculative output equals plain" *
          SPECD_MAY_SKIP) {
  if (!test::have_quant_compat()) return;
  PluginRegistry registry({std::string(SPECD_BINARY_DIR) + "/bin/plugins"});
  for (const char* preset : kPresets) {
    CAPTURE(preset);
    const std::string model = preset_path(preset);
    Engine plain(make_config(model, {}), registry);
    Engine ngram(
        make_config(model, {"proposer.kind=ngram", "proposer.k=5", "acceptance.rule=greedy"}),
        registry);
    for (const std::string& prompt : kPrompts) {
      CAPTURE(prompt);
      const GenerationResult base = plain.generate(prompt);
      REQUIRE(base.tokens.size() == 24);
      const GenerationResult spec = ngram.generate(prompt);
      CHECK(test::join_ids(spec.tokens) == test::join_ids(base.tokens));
      CHECK(spec.text == base.text);
    }
  }
}

TEST_CASE("quantized target and draft of different presets: speculative equals plain" *
          SPECD_MAY_SKIP) {
  if (!test::have_quant_compat()) return;
  PluginRegistry registry({std::string(SPECD_BINARY_DIR) + "/bin/plugins"});
  const std::string target = preset_path("Q4_K_M");
  Engine plain(make_config(target, {}), registry);
  for (const char* draft : {"Q8_0", "Q2_K", "IQ4_XS", "Q4_K_M"}) {
    CAPTURE(draft);
    Engine e(make_config(target, {"proposer.kind=draft-model",
                                  "proposer.model=\"" + preset_path(draft) + "\"", "proposer.k=4",
                                  "proposer.mode=greedy"}),
             registry);
    for (const std::string& prompt : kPrompts) {
      CAPTURE(prompt);
      const GenerationResult base = plain.generate(prompt);
      const GenerationResult out = e.generate(prompt);
      CHECK(test::join_ids(out.tokens) == test::join_ids(base.tokens));
      CHECK(out.stats.drafted > 0);
      if (std::string(draft) == "Q4_K_M") CHECK(out.stats.accepted == out.stats.drafted);
    }
  }
}
