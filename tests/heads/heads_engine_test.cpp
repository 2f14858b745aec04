// Head proposers through the engine at temperature 0: output equals plain decoding token
// for token on many prompts (random-weight target and heads; the shipped models when
// present), and a head bound to another target is refused when the run starts.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "bench/weight_copy.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine_config.hpp"
#include "head_fixtures.hpp"
#include "plugin/registry.hpp"
#include "random_heads.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"

using namespace specd;

namespace {

// The engine suites' prompts and a loop with indentation.
const std::vector<std::string> kPrompts = [] {
  std::vector<std::string> prompts = test::kEnginePrompts;
  prompts.push_back("for i in range(10):\n    print(i)\n");
  return prompts;
}();

void check_equivalence(const std::string& target, const std::string& head_dir,
                       const std::vector<std::string>& prompts, int max_tokens,
                       PluginRegistry& registry) {
  const std::string n = "sampling.max_tokens=" + std::to_string(max_tokens);
  Engine plain(test::greedy_config(target, {n}), registry);
  std::vector<GenerationResult> base;
  for (const std::string& prompt : prompts) base.push_back(plain.generate(prompt));
  for (std::vector<std::string> run : test::head_runs(head_dir)) {
    run.push_back(n);
    const std::string what = run[0] + " " + run[run.size() - 2];
    CAPTURE(what);
    Engine spec(test::greedy_config(target, run), registry);
    for (size_t i = 0; i < prompts.size(); ++i) {
      CAPTURE(prompts[i]);
      GenerationResult out = spec.generate(prompts[i]);
      CHECK(test::join_ids(out.tokens) == test::join_ids(base[i].tokens));
      CHECK(out.text == base[i].text);
      if (prompts[i].size() > 1) CHECK(out.stats.drafted > 0);
    }
  }
}

struct Fixture {
  std::string dir = test::temp_dir("heads-engine");
  std::string target = dir + "/target.gguf";
  PluginRegistry registry{{SPECD_TEST_PLUGINS}};
  Fixture() {
    test::write_random_target(target, 31);
    test::write_random_heads(dir, target, 4);
  }
};

// The shipped models' folder, or "" after reporting the skip where the target or a head is
// missing.
std::string shipped_heads_or_skip() {
  const std::string models = std::string(SPECD_SOURCE_DIR) + "/models";
  for (const char* file : {"target.gguf", "medusa.gguf", "eagle.gguf", "mtp.gguf"}) {
    if (!std::filesystem::exists(models + "/" + file)) {
      ::specd::test::skip_missing(models, "/", file, " is not there");
      return "";
    }
  }
  return models;
}

}  // namespace

TEST_CASE("greedy output with every head proposer equals plain greedy output") {
  Fixture f;
  check_equivalence(f.target, f.dir, kPrompts, 40, f.registry);
}

TEST_CASE("greedy equivalence on the shipped target and heads" * SPECD_MAY_SKIP) {
  const std::string models = shipped_heads_or_skip();
  if (models.empty()) return;
  PluginRegistry registry{{SPECD_TEST_PLUGINS}};
  check_equivalence(models + "/target.gguf", models,
                    {"def f(x):", "import numpy as np\n", "class Stack:\n    def push(self, x):"},
                    48, registry);
}

TEST_CASE("heads with quantized matrices (q8_0, q4_K_M copies of the shipped heads)" *
          SPECD_MAY_SKIP) {
  const std::string models = shipped_heads_or_skip();
  if (models.empty()) return;
  PluginRegistry registry{{SPECD_TEST_PLUGINS}};
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_K}) {
    CAPTURE(ggml_type_name(type));
    const std::string dir = test::temp_dir(std::string("heads-") + ggml_type_name(type));
    for (const char* head : {"medusa.gguf", "eagle.gguf", "mtp.gguf"})
      CHECK(bench::write_weight_copy(models + "/" + head, dir + "/" + head, type) > 0);
    check_equivalence(models + "/target.gguf", dir, {"def f(x):", "import numpy as np\n"}, 32,
                      registry);
  }
}

TEST_CASE("the engine refuses a head bound to another target, naming both") {
  Fixture f;
  const std::string other = f.dir + "/other.gguf";
  test::write_random_target(other, 32);
  test::RandomHeadSpec hs;
  test::write_random_eagle(f.dir + "/eagle-other.gguf", other, hs);
  try {
    Engine e(test::greedy_config(f.target, {"proposer.kind=eagle",
                                            "proposer.model=\"" + f.dir + "/eagle-other.gguf\""}),
             f.registry);
    FAIL("the engine accepted a head bound to another target");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("random-llama-32") != std::string::npos);
    CHECK(what.find("random-llama-31") != std::string::npos);
  }
  // A wrong digest is refused even when the name matches.
  test::RandomHeadSpec by_name;
  by_name.bind_digest = std::string(64, '0');
  test::write_random_mtp(f.dir + "/mtp-bad-digest.gguf", f.target, by_name);
  CHECK_THROWS_AS(
      Engine(test::greedy_config(f.target, {"proposer.kind=mtp", "proposer.model=\"" + f.dir +
                                                                     "/mtp-bad-digest.gguf\""}),
             f.registry),
      Error);
}
