// Every proposer over targets of each architecture through the engine at temperature 0:
// n-gram, draft models (of the target's architecture or another one with the same
// vocabulary, sampling and greedy drafting, chains) and the Medusa, EAGLE and MTP heads
// bound to the target give exactly plain decoding's tokens.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine_config.hpp"
#include "head_fixtures.hpp"
#include "plugin/registry.hpp"
#include "random_heads.hpp"
#include "random_llama.hpp"

using namespace specd;

namespace {

Config make_config(const std::string& model, const std::vector<std::string>& overrides) {
  return test::greedy_config(model, overrides, 32, "cpu");
}

const std::vector<std::string> kPrompts = {
    "def fibonacci(n):",
    "aaaa bbbb aaaa bbbb aaaa",
    "import os\nimport sys\n\nfor",
};

// A random model of `arch` with the byte tokenizer of every test model (same vocabulary).
std::string write_model(const std::string& dir, const std::string& arch, uint64_t seed, bool small,
                        bool rope_freqs = false) {
  test::RandomLlamaSpec s;
  s.architecture = arch;
  s.seed = seed;
  s.rope_freqs = rope_freqs;
  // wider q than d, as in Qwen3 and gpt-oss
  if (arch == "qwen3" || arch == "qwen3moe" || arch == "gpt-oss") s.head_dim = 32;
  if (arch == "gpt-oss") s.yarn_scale = 32.0f;
  if (small) {
    s.n_layer = 1;
    s.n_embd = 32;
    s.n_ff = 64;
    s.tied_output = true;
  }
  const std::string path =
      dir + "/" + arch + (small ? "-draft" : "-target") + (rope_freqs ? "-freqs" : "") + ".gguf";
  test::write_random_llama(path, s);
  return path;
}

// Runs plain decoding, then each proposer configuration, on every prompt.
void check_runs(const std::string& target, const std::vector<std::vector<std::string>>& runs,
                PluginRegistry& registry) {
  Engine plain(make_config(target, {}), registry);
  std::vector<GenerationResult> base;
  for (const std::string& prompt : kPrompts) base.push_back(plain.generate(prompt));
  for (const std::vector<std::string>& run : runs) {
    std::string what;
    for (const std::string& r : run) what += r + " ";
    CAPTURE(what);
    Engine spec(make_config(target, run), registry);
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      CAPTURE(kPrompts[i]);
      const GenerationResult out = spec.generate(kPrompts[i]);
      CHECK(test::join_ids(out.tokens) == test::join_ids(base[i].tokens));
      CHECK(out.text == base[i].text);
      CHECK(out.stats.drafted > 0);
    }
  }
}

std::vector<std::vector<std::string>> every_strategy(const std::string& draft,
                                                     const std::string& heads) {
  const std::string dm = "proposer.model=\"" + draft + "\"";
  std::vector<std::vector<std::string>> runs = {
      {"proposer.kind=ngram", "proposer.k=5", "acceptance.rule=greedy"},
      {"proposer.kind=draft-model", dm, "proposer.k=4", "proposer.mode=sample"},
      {"proposer.kind=draft-model", dm, "proposer.k=3", "proposer.mode=greedy"},
  };
  const std::vector<std::vector<std::string>> head_runs = test::head_runs(heads);
  runs.insert(runs.end(), head_runs.begin(), head_runs.end());
  return runs;
}

}  // namespace

TEST_CASE("a qwen2 target with a qwen2 draft: every strategy equals plain greedy decoding") {
  const std::string dir = test::temp_dir("arch-qwen2");
  PluginRegistry registry{{}};
  const std::string target = write_model(dir, "qwen2", 41, false);
  const std::string draft = write_model(dir, "qwen2", 42, true);
  test::write_random_heads(dir, target, 5);
  check_runs(target, every_strategy(draft, dir), registry);
}

TEST_CASE("qwen3, phi3, qwen3moe, gpt-oss, llama-with-rope_freqs targets, other drafts") {
  PluginRegistry registry{{}};
  struct Pair {
    std::string target_arch, draft_arch;
    bool target_freqs;
  };
  for (const Pair& p : {Pair{"qwen3", "phi3", false}, Pair{"phi3", "qwen2", false},
                        Pair{"llama", "qwen3", true}, Pair{"qwen3moe", "qwen3", false},
                        Pair{"qwen2", "qwen3moe", false}, Pair{"gpt-oss", "llama", false}}) {
    CAPTURE(p.target_arch);
    const std::string dir = test::temp_dir("arch-" + p.target_arch);
    const std::string target = write_model(dir, p.target_arch, 43, false, p.target_freqs);
    const std::string draft = write_model(dir, p.draft_arch, 44, true);
    test::write_random_heads(dir, target, 5);
    const auto all = every_strategy(draft, dir);
    // The draft model (both modes), one tree head (EAGLE's small tree) and one chain head
    // (MTP, sampled).
    check_runs(target, {all[1], all[2], all[8], all[3]}, registry);
  }
}
