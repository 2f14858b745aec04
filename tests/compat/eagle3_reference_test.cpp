// EAGLE-3 heads and DFlash drafters in llama.cpp's layout (tests/compat/eagle3: written by
// llama.cpp's gguf-py for ../shared/compat/arch/llama.gguf; eagle3_reference.json: what llama.cpp's
// server drafted with them, made by make_eagle3_reference.py there). Through specd's engine, with
// the EAGLE proposer drafting a greedy chain of 4 as llama.cpp does: the output equals plain
// greedy decoding and llama.cpp's, and every round that starts where one of llama.cpp's
// rounds starts drafts the same tokens and accepts as many.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../bench/json_parse.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine_config.hpp"
#include "gguf_rewrite.hpp"
#include "llama_rounds.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"

using namespace specd;

namespace {

const std::string kHeads = std::string(SPECD_SOURCE_DIR) + "/tests/compat/eagle3";
const std::string kTarget = std::string(SPECD_SOURCE_DIR) + "/../shared/compat/arch/llama.gguf";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Config config(const std::vector<std::string>& extra, int n_predict) {
  return test::greedy_config(kTarget, extra, n_predict, "cpu");
}

// The message of the Error an engine raises for `c`; where it starts, the test fails with
// `accepted`.
std::string refusal_of(const Config& c, const PluginRegistry& registry, const char* accepted) {
  try {
    Engine engine(c, registry);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL(accepted);
  return "";
}

// Whether the shared compat target is there; where it is not, the skip is reported.
bool have_compat_target() {
  if (std::filesystem::exists(kTarget)) return true;
  ::specd::test::skip_missing(kTarget, " is not there (the shared compat data)");
  return false;
}

}  // namespace

TEST_CASE("EAGLE-3 heads in llama.cpp's layout draft what llama.cpp drafts") {
  if (!have_compat_target()) return;
  const test::Json ref = test::JsonParser(read_file(kHeads + "/eagle3_reference.json")).parse();
  const int n_predict = static_cast<int>(ref["n_predict"].n);
  const int n_draft = static_cast<int>(ref["n_draft"].n);
  PluginRegistry registry{{}};
  Engine plain(config({}, n_predict), registry);
  int heads = 0;
  for (const auto& [file, cases] : ref["heads"].o) {
    CAPTURE(file);
    const std::string k = std::to_string(n_draft);
    Engine spec(config({"proposer.kind=\"eagle\"", "proposer.model=\"" + kHeads + "/" + file + "\"",
                        "proposer.k=" + k, "proposer.depth=" + k, "proposer.top_k=1",
                        "proposer.max_nodes=" + k},
                       n_predict),
                registry);
    const auto [compared, llama_rounds] = test::compare_rounds(spec, plain, cases);
    // Almost every llama.cpp round has a specd round starting at the same place.
    CHECK(compared * 10 >= llama_rounds * 8);
    ++heads;
  }
  CHECK(heads == 2);
}

TEST_CASE("an EAGLE-3 head is refused for a target it does not fit, naming both files") {
  const std::string other = std::string(SPECD_SOURCE_DIR) + "/../shared/compat/quant/F16.gguf";
  if (!std::filesystem::exists(other)) {
    ::specd::test::skip_missing(other, " is not there (the shared compat data)");
    return;
  }
  PluginRegistry registry{{}};
  // quant/F16.gguf is 256 wide; the heads were made for the 128-wide arch/llama.gguf.
  std::vector<std::string> overrides = {"target.model=\"" + other + "\"", "engine.backend=cpu",
                                        "engine.threads=1", "proposer.kind=\"eagle\"",
                                        "proposer.model=\"" + kHeads + "/eagle3-shared.gguf\""};
  const Config c = parse_config("", "eagle3.toml", overrides);
  const std::string what =
      refusal_of(c, registry, "the engine accepted an EAGLE-3 head made for another target");
  CHECK(what.find("eagle3-shared.gguf") != std::string::npos);
  CHECK(what.find("F16.gguf") != std::string::npos);
  CHECK(what.find("width 128") != std::string::npos);
}

TEST_CASE("an EAGLE-3 head whose vocabulary is the target's reordered is refused, naming a token") {
  if (!have_compat_target()) return;
  const std::string swapped = test::temp_dir("eagle3-vocab") + "/swapped.gguf";
  const GgufFile target = GgufFile::open(kTarget);
  std::vector<std::string> tokens;
  const GgufValue& t_tokens = *target.find("tokenizer.ggml.tokens");
  for (size_t k = 0; k < t_tokens.array_size(); ++k) tokens.emplace_back(t_tokens.string_at(k));
  REQUIRE(tokens.size() > 20);
  std::swap(tokens[10], tokens[20]);
  test::rewrite_gguf(kHeads + "/eagle3-shared.gguf", swapped, [&](const GgufFile&, GgufWriter& w) {
    w.set("tokenizer.ggml.tokens", GgufValue::string_array(tokens));
  });
  PluginRegistry registry{{}};
  const std::string what =
      refusal_of(config({"proposer.kind=\"eagle\"", "proposer.model=\"" + swapped + "\""}, 4),
                 registry, "the engine accepted a head with a reordered vocabulary");
  CAPTURE(what);
  CHECK(what.find("differs from the target's at token 10") != std::string::npos);
  CHECK(what.find("swapped.gguf") != std::string::npos);
}

TEST_CASE("an EAGLE-3 head keyed as earlier converters wrote it drafts the same") {
  if (!have_compat_target()) return;
  const std::string dir = test::temp_dir("eagle3-keys");
  const std::string head = kHeads + "/eagle3-shared.gguf";
  const std::string older = dir + "/extract-layers.gguf", keyless = dir + "/no-layers.gguf";
  test::rewrite_gguf(head, older, [](const GgufFile& f, GgufWriter& w) {
    w.erase("eagle3.target_layers");
    w.set("eagle3.extract_layers", *f.find("eagle3.target_layers"));
  });
  test::rewrite_gguf(head, keyless,
                     [](const GgufFile&, GgufWriter& w) { w.erase("eagle3.target_layers"); });
  PluginRegistry registry{{}};
  auto drafts_of = [&](const std::string& file) {
    Engine engine(
        config({"proposer.kind=\"eagle\"", "proposer.model=\"" + file + "\"", "proposer.k=4",
                "proposer.depth=4", "proposer.top_k=1", "proposer.max_nodes=4"},
               16),
        registry);
    std::vector<int32_t> drafted;
    GenerateOptions options;
    options.on_round = [&](std::span<const int32_t> tokens, std::span<const int32_t>, uint64_t) {
      drafted.insert(drafted.end(), tokens.begin(), tokens.end());
    };
    engine.generate("def parse(argv):", options);
    return drafted;
  };
  const std::vector<int32_t> drafted = drafts_of(head);
  CHECK(drafted.size() >= 40);
  CHECK(drafts_of(older) == drafted);
  try {
    drafts_of(keyless);
    FAIL("a head without target layers was run");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("eagle3.target_layers (or eagle3.extract_layers)") !=
          std::string::npos);
  }
}

// DFlash (tests/compat/dflash, made by make_dflash_reference.py there): a block drafter
// reading two target layers' inputs, drafting 4 tokens a round in one block pass.
TEST_CASE("DFlash drafters in llama.cpp's layout draft what llama.cpp drafts") {
  if (!have_compat_target()) return;
  const std::string dir = std::string(SPECD_SOURCE_DIR) + "/tests/compat/dflash";
  const test::Json ref = test::JsonParser(read_file(dir + "/dflash_reference.json")).parse();
  const int n_predict = static_cast<int>(ref["n_predict"].n);
  PluginRegistry registry{{}};
  Engine plain(config({}, n_predict), registry);
  Engine spec(
      config({"proposer.kind=\"dflash\"", "proposer.model=\"" + dir + "/" + ref["drafter"].s + "\"",
              "proposer.k=" + std::to_string(static_cast<int>(ref["n_draft"].n))},
             n_predict),
      registry);
  const auto [compared, llama_rounds] = test::compare_rounds(spec, plain, ref["prompts"]);
  CHECK(compared * 10 == llama_rounds * 10);  // every round: k is cut at the budget alike

  // Files that do not fit are refused, each naming what is wrong.
  const std::string tmp = test::temp_dir("dflash-bad");
  const std::string drafter = dir + "/" + ref["drafter"].s;
  const auto refused = [&](const std::string& name,
                           const std::function<void(const GgufFile&, GgufWriter&)>& edit,
                           const std::string& message) {
    CAPTURE(name);
    test::rewrite_gguf(drafter, tmp + "/" + name, edit);
    try {
      Engine engine(config({"proposer.kind=\"dflash\"",
                            "proposer.model=\"" + tmp + "/" + name + "\"", "proposer.k=4"},
                           8),
                    registry);
      FAIL("a DFlash drafter that does not fit was run");
    } catch (const Error& e) {
      INFO(std::string(e.what()));
      CHECK(std::string(e.what()).find(message) != std::string::npos);
    }
  };
  refused(
      "no-mask.gguf",
      [](const GgufFile&, GgufWriter& w) { w.erase("tokenizer.ggml.mask_token_id"); },
      "tokenizer.ggml.mask_token_id");
  refused(
      "deep-layer.gguf",
      [](const GgufFile&, GgufWriter& w) {
        w.set("dflash.target_layers", GgufValue::int32_array({0, 7}));
      },
      "features of layer 7 were asked for, but the model has 2 layers");
  refused(
      "wide.gguf",
      [](const GgufFile&, GgufWriter& w) { w.set_u32("dflash.embedding_length", 256); },
      "width 256");
}
