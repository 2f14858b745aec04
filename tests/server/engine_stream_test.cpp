// The engine as the server drives it, on the shipped models: streamed pieces always
// concatenate to the final text (stop strings included), per-generation sampling overrides
// the configuration, and a cancelled generation ends at once.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "batching/shared_engine.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "plugin/registry.hpp"
#include "test_skip.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace specd;

namespace {

const std::string kModels = std::string(SPECD_SOURCE_DIR) + "/models";

bool have_models() {
  if (std::filesystem::exists(kModels + "/target.gguf") &&
      std::filesystem::exists(kModels + "/draft.gguf"))
    return true;
  ::specd::test::skip_missing("the shipped models are missing from ", kModels);
  return false;
}

Config config(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"engine.backend=\"cpu\"",
                                "engine.threads=1",
                                "target.model=\"" + kModels + "/target.gguf\"",
                                "proposer.kind=\"draft-model\"",
                                "proposer.model=\"" + kModels + "/draft.gguf\"",
                                "proposer.k=3",
                                "acceptance.rule=\"rejection\"",
                                "sampling.temperature=0",
                                "sampling.max_tokens=40",
                                "sampling.ignore_eos=true"};
  o.insert(o.end(), extra.begin(), extra.end());
  return parse_config("", "stream.toml", o);
}

}  // namespace

TEST_CASE("streamed text equals the final text for every stop string cut") {
  if (!have_models()) return;
  PluginRegistry registry{std::vector<std::string>{}};
  Engine engine(config(), registry);
  const std::string prompt = "Once upon a time";
  GenerationResult base = engine.generate(prompt);
  REQUIRE(base.text.size() > 20);
  int cut_checked = 0;
  // Stop strings of 1..4 bytes starting at many places: some inside one piece, some
  // spanning pieces; each must cut the streamed text exactly where the final text ends.
  for (size_t at = 1; at + 4 < base.text.size(); at += 3) {
    for (size_t len = 1; len <= 4; ++len) {
      GenerateOptions o;
      o.sampling = config().sampling;
      o.sampling->stop = {base.text.substr(at, len)};
      std::string streamed;
      o.on_text = [&](const std::string& piece) {
        CHECK(!piece.empty());
        streamed += piece;
      };
      GenerationResult r = engine.generate(prompt, o);
      CAPTURE(o.sampling->stop[0]);
      CHECK(r.stop_reason == "stop");
      CHECK(r.text == base.text.substr(0, base.text.find(o.sampling->stop[0])));
      CHECK(streamed == r.text);
      ++cut_checked;
    }
  }
  CHECK(cut_checked > 10);
}

TEST_CASE("per-generation sampling replaces the configuration's") {
  if (!have_models()) return;
  PluginRegistry registry{std::vector<std::string>{}};
  Engine engine(config(), registry);
  GenerateOptions o;
  o.sampling = config().sampling;
  o.sampling->temperature = 0.9;
  o.sampling->top_k = 20;
  engine.reseed(7);
  GenerationResult a = engine.generate("Once upon a time", o);
  engine.reseed(7);
  GenerationResult b = engine.generate("Once upon a time", o);
  CHECK(a.tokens == b.tokens);  // the seed decides the draws
  GenerationResult greedy = engine.generate("Once upon a time");
  GenerationResult greedy_again = engine.generate("Once upon a time");
  CHECK(greedy.tokens == greedy_again.tokens);
  // Sampled at 0.9 the text differs from greedy for at least one of several seeds.
  bool differs = false;
  for (uint64_t seed = 1; seed <= 5 && !differs; ++seed) {
    engine.reseed(seed);
    differs = engine.generate("Once upon a time", o).tokens != greedy.tokens;
  }
  CHECK(differs);
  o.sampling->top_p = 0;  // invalid: refused, the engine goes on
  CHECK_THROWS(engine.generate("x", o));
  CHECK(engine.generate("Once upon a time").tokens == greedy.tokens);
}

TEST_CASE("a cancelled generation stops at the next round") {
  if (!have_models()) return;
  PluginRegistry registry{std::vector<std::string>{}};
  Engine engine(config(), registry);
  GenerateOptions o;
  o.max_tokens = 200;
  int pieces = 0;
  o.on_text = [&](const std::string&) { ++pieces; };
  o.cancelled = [&] { return pieces >= 3; };
  GenerationResult r = engine.generate("Once upon a time", o);
  CHECK(r.stop_reason == "cancelled");
  CHECK(r.tokens.size() < 200);
  CHECK(r.tokens.size() >= 3);
  o.cancelled = [] { return true; };  // cancelled before the first round: nothing generated
  CHECK(engine.generate("Once upon a time", o).tokens.empty());
  GenerateOptions five;
  five.max_tokens = 5;
  CHECK(engine.generate("Once upon a time", five).tokens.size() == 5);
}

TEST_CASE("the server's engine holds the shared parts only: no verifier or proposer of its own") {
  if (!have_models()) return;
  PluginRegistry registry{std::vector<std::string>{}};
  const Config c = config();
  Engine whole(c, registry);
  CHECK(whole.use() == EngineUse::generate);
  CHECK(whole.proposer_name() == "draft-model");

  batching::SharedEngine cache(c, registry);
  Engine& shared = cache.engine();
  CHECK(shared.use() == EngineUse::shared);
  // No proposer or rule built for the engine itself (the scheduler's strategies own them)...
  CHECK(shared.proposer_name() == "none");
  CHECK(shared.rule_name().empty());
  // ...and no verifier: generating needs a sequence's own, so the engine refuses with a reason.
  try {
    shared.generate("Once upon a time");
    FAIL("a shared engine generated by itself");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("EngineUse::shared") != std::string::npos);
  }
  // What the scheduler reads from it is what a whole engine says.
  CHECK(shared.context_length() == whole.context_length());
  CHECK(shared.invariant_rows() == whole.invariant_rows());
  CHECK(shared.tokenizer().n_tokens() == whole.tokenizer().n_tokens());
  // The strategy's proposer is built on it as on a whole engine.
  batching::Strategy& s = cache.strategy(batching::StrategyChoice{});
  CHECK(s.proposer_name == "draft-model");
}
