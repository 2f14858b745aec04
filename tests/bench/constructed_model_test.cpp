#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "bench/constructed_dflash.hpp"
#include "bench/constructed_eagle3.hpp"
#include "bench/constructed_model.hpp"
#include "bench/weight_copy.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "gguf/gguf_reader.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace specd;

namespace {

// Greedy decoding of `model` on the CPU, with `extra` overrides (a proposer) appended.
Config plain_config(const std::string& model, int max_tokens,
                    const std::vector<std::string>& extra = {}) {
  std::vector<std::string> all = {"target.model=\"" + model + "\"",
                                  "engine.backend=cpu",
                                  "engine.threads=1",
                                  "sampling.temperature=0",
                                  "sampling.ignore_eos=true",
                                  "sampling.max_tokens=" + std::to_string(max_tokens)};
  all.insert(all.end(), extra.begin(), extra.end());
  return parse_config("", "test.toml", all);
}

// The "tiny" preset, widened so that the planted map survives quantisation.
bench::ConstructedSpec tiny_wide_spec() {
  bench::ConstructedSpec spec = bench::constructed_preset("tiny");
  spec.n_embd = 128;
  spec.n_ff = 256;
  return spec;
}

// Every token of `tokens` is the planted successor of the one before it, starting from the
// last token of `prompt`.
void check_walks_map(Engine& engine, const std::string& prompt, const std::vector<int32_t>& tokens,
                     const std::vector<int32_t>& next) {
  int32_t prev = engine.tokenizer().encode(prompt, true).back();
  for (int32_t t : tokens) {
    CHECK(t == next[prev]);
    prev = t;
  }
}

// A constructed proposer for the widened tiny target: how it is written and run.
struct ConstructedProposer {
  std::string dir_name;  // of the scratch directory
  std::string file;      // the proposer's file name there
  void (*write)(const std::string& path, const bench::ConstructedSpec& target, double agreement);
  double refused_agreement;           // one that `write` must refuse
  std::vector<std::string> settings;  // of the proposer, but for its model file
  double max_rate_at_half;            // the acceptance rate stays under this at agreement 0.5
};

// Built to agree with the map on fraction a (1 and 0.5), the proposer leaves plain greedy
// decoding's output as it is; every draft is accepted at a = 1, and at a = 0.5 some are,
// at a rate under `max_rate_at_half`.
void check_constructed_proposer(const ConstructedProposer& c) {
  const std::string dir = test::temp_dir(c.dir_name);
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  const bench::ConstructedSpec spec = tiny_wide_spec();
  bench::write_constructed_model(dir + "/target.gguf", spec);
  CHECK_THROWS_AS(c.write(dir + "/bad.gguf", spec, c.refused_agreement), UsageError);
  Engine plain(plain_config(dir + "/target.gguf", 48), registry);
  for (double a : {1.0, 0.5}) {
    CAPTURE(a);
    const std::string path = dir + "/" + c.file;
    c.write(path, spec, a);
    std::vector<std::string> overrides = c.settings;
    overrides.push_back("proposer.model=\"" + path + "\"");
    Engine speculative(plain_config(dir + "/target.gguf", 48, overrides), registry);
    for (const std::string prompt : {"abc", "Q"}) {
      GenerationResult r = speculative.generate(prompt);
      CHECK(r.tokens == plain.generate(prompt).tokens);
      if (a == 1.0) CHECK(r.stats.acceptance_rate() == doctest::Approx(1.0));
      if (a == 0.5) CHECK(r.stats.acceptance_rate() < c.max_rate_at_half);
      if (a == 0.5) CHECK(r.stats.accepted > 0);
    }
  }
}

}  // namespace

TEST_CASE("constructed model: plain greedy decoding walks the planted map") {
  const std::string dir = test::temp_dir("bench-constructed");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  for (const char* type : {"f16", "q8_0"}) {
    CAPTURE(type);
    bench::ConstructedSpec spec = tiny_wide_spec();
    spec.weights = type;
    const std::string path = dir + "/target-" + type + ".gguf";
    bench::write_constructed_model(path, spec);
    const std::vector<int32_t> next = bench::constructed_next(spec);
    Engine engine(plain_config(path, 24), registry);
    for (const std::string prompt : {"a", "def", "Q"}) {
      GenerationResult r = engine.generate(prompt);
      REQUIRE(r.tokens.size() == 24);
      check_walks_map(engine, prompt, r.tokens, next);
    }
  }
}

TEST_CASE("constructed drafts agree with the map on the stated fraction") {
  bench::ConstructedSpec target = bench::constructed_preset("tiny");
  const std::vector<int32_t> planted = bench::constructed_next(target);
  for (double a : {1.0, 0.9, 0.5}) {
    const std::vector<int32_t> draft = bench::constructed_next(bench::constructed_draft(a));
    int agree = 0, total = 0;
    for (int32_t t = 2 + 0x20; t <= 2 + 0x7E; ++t, ++total) agree += draft[t] == planted[t];
    CHECK(double(agree) / total == doctest::Approx(a).epsilon(0.02));
  }
  CHECK(bench::constructed_parameters(bench::constructed_preset("0.1b")) > 80'000'000);
  CHECK(bench::constructed_parameters(bench::constructed_preset("1.5b")) < 1'600'000'000);
  CHECK_THROWS(bench::constructed_preset("7b"));
}

TEST_CASE("constructed draft: greedy speculative decoding accepts what the draft agrees on") {
  const std::string dir = test::temp_dir("bench-constructed-draft");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  const bench::ConstructedSpec spec = tiny_wide_spec();
  bench::write_constructed_model(dir + "/target.gguf", spec);
  bench::write_constructed_model(dir + "/draft.gguf", bench::constructed_draft(1.0));
  Engine engine(
      plain_config(dir + "/target.gguf", 32,
                   {"proposer.kind=\"draft-model\"", "proposer.model=\"" + dir + "/draft.gguf\"",
                    "proposer.mode=\"greedy\"", "proposer.k=4", "acceptance.rule=\"greedy\""}),
      registry);
  GenerationResult r = engine.generate("abc");
  CHECK(r.stats.acceptance_rate() == doctest::Approx(1.0));
  CHECK(r.stats.tau() > 4.0);
}

TEST_CASE("constructed EAGLE-3 head: drafts the map where it agrees, output equals plain") {
  check_constructed_proposer(
      {.dir_name = "bench-constructed-eagle3",
       .file = "eagle3.gguf",
       .write = bench::write_constructed_eagle3,
       .refused_agreement = 1.5,
       .settings = {"proposer.kind=\"eagle\"", "proposer.k=4", "proposer.depth=4",
                    "proposer.top_k=1", "proposer.max_nodes=4"},
       // Every draft is right where the head follows the map: all of them at a = 1, and a
       // first token right about half the time at a = 0.5.
       .max_rate_at_half = 0.6});
}

TEST_CASE("constructed DFlash drafter: its first token follows the map, output equals plain") {
  check_constructed_proposer(
      {.dir_name = "bench-constructed-dflash",
       .file = "dflash.gguf",
       .write = bench::write_constructed_dflash,
       .refused_agreement = -0.5,
       .settings = {"proposer.kind=\"dflash\"", "proposer.k=1", "acceptance.rule=\"exact-match\""},
       .max_rate_at_half = 0.7});
}

TEST_CASE("weight copy: q8_0 copy of a model still walks the planted map") {
  const std::string dir = test::temp_dir("bench-weight-copy");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  const bench::ConstructedSpec spec = tiny_wide_spec();
  bench::write_constructed_model(dir + "/f16.gguf", spec);
  CHECK(bench::write_weight_copy(dir + "/f16.gguf", dir + "/q8.gguf", GgmlType::kQ8_0) ==
        2 + 7 * spec.n_layer);
  const std::vector<int32_t> next = bench::constructed_next(spec);
  Engine engine(plain_config(dir + "/q8.gguf", 16), registry);
  check_walks_map(engine, "x", engine.generate("x").tokens, next);
}

TEST_CASE("q4_K_M (llama.cpp's mix of q4_K and q6_K): constructed model and weight copy") {
  const std::string dir = test::temp_dir("bench-q4km");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  bench::ConstructedSpec spec = bench::constructed_preset("tiny");  // rows of 256 and 512
  spec.weights = "q4_K_M";
  bench::write_constructed_model(dir + "/q4km.gguf", spec);
  {
    const GgufFile f = GgufFile::open(dir + "/q4km.gguf");
    CHECK(f.require_tensor("output.weight").type == GgmlType::kQ6_K);
    // use_more_bits for 2 layers: layer 1 (the last eighth), not layer 0.
    CHECK(f.require_tensor("blk.1.attn_v.weight").type == GgmlType::kQ6_K);
    CHECK(f.require_tensor("blk.1.ffn_down.weight").type == GgmlType::kQ6_K);
    CHECK(f.require_tensor("blk.0.attn_v.weight").type == GgmlType::kQ4_K);
    CHECK(f.require_tensor("blk.0.attn_q.weight").type == GgmlType::kQ4_K);
    CHECK(f.require_tensor("token_embd.weight").type == GgmlType::kQ4_K);
  }
  const std::vector<int32_t> next = bench::constructed_next(spec);
  spec.weights = "f16";
  bench::write_constructed_model(dir + "/f16.gguf", spec);
  CHECK(bench::write_weight_copy(dir + "/f16.gguf", dir + "/copy.gguf", GgmlType::kQ4_K) ==
        2 + 7 * spec.n_layer);
  for (const char* file : {"q4km.gguf", "copy.gguf"}) {
    CAPTURE(file);
    Engine engine(plain_config(dir + "/" + file, 16), registry);
    check_walks_map(engine, "x", engine.generate("x").tokens, next);
  }
}
