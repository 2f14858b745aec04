// Drafting across vocabularies ([proposer] vocabulary = "text" / "intersection"): the shipped
// draft with its token ids shuffled (every tensor row and tokenizer entry moved with its id)
// has a vocabulary that differs from the target's id for id but spells the same texts. It is
// refused as a same-vocabulary draft, and across vocabularies it drafts what the unshuffled
// draft drafts: output equals plain greedy output, and acceptance stays close to the
// unshuffled draft's. Then tokenizers that really differ (BPE and bytes), both ways.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/shuffled_vocabulary.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine_config.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "shipped_models.hpp"
#include "test_skip.hpp"

using namespace specd;

namespace {

Config config(const std::string& target, const std::vector<std::string>& extra) {
  return test::greedy_config(target, extra, 48, "cpu");
}

// A draft-model proposer; `vocabulary` empty leaves [proposer] vocabulary unset.
std::vector<std::string> drafting_with(const std::string& draft, const std::string& vocabulary) {
  std::vector<std::string> extra = {"proposer.kind=\"draft-model\"",
                                    "proposer.model=\"" + draft + "\"", "proposer.k=4"};
  if (!vocabulary.empty()) extra.push_back("proposer.vocabulary=\"" + vocabulary + "\"");
  return extra;
}

const std::string kShippedTarget = test::kShippedModels + "/target.gguf";
const std::string kShippedDraft = test::kShippedModels + "/draft.gguf";

bool shipped_models_present() {
  return std::filesystem::exists(kShippedTarget) && std::filesystem::exists(kShippedDraft);
}

}  // namespace

TEST_CASE("a draft of another vocabulary: refused as shared, exact across" * SPECD_MAY_SKIP) {
  const std::string &target = kShippedTarget, &draft = kShippedDraft;
  if (!shipped_models_present()) {
    ::specd::test::skip_missing(target, " or draft.gguf is missing");
    return;
  }
  const std::string dir = test::temp_dir("cross-vocabulary");
  const std::string shuffled = dir + "/draft-shuffled.gguf";
  bench::write_shuffled_vocabulary(draft, shuffled, 7);
  PluginRegistry registry{{}};
  const auto with_draft = [&](const std::string& model, const std::string& vocabulary) {
    return config(target, drafting_with(model, vocabulary));
  };
  CHECK_THROWS_WITH_AS(Engine(with_draft(shuffled, ""), registry),
                       doctest::Contains("vocabulary = \"text\""), Error);
  Engine plain(config(target, {}), registry);
  Engine same(with_draft(draft, ""), registry);
  Engine text(with_draft(shuffled, "text"), registry);
  Engine intersection(with_draft(shuffled, "intersection"), registry);
  uint64_t drafted[3] = {0, 0, 0}, accepted[3] = {0, 0, 0};
  for (const std::string prompt :
       {"def fibonacci(n):", "The old man walked to the", "import os\nimport sys\n\nfor"}) {
    CAPTURE(prompt);
    const GenerationResult base = plain.generate(prompt);
    Engine* engines[3] = {&same, &text, &intersection};
    for (int e = 0; e < 3; ++e) {
      const GenerationResult out = engines[e]->generate(prompt);
      CHECK(out.tokens == base.tokens);
      drafted[e] += out.stats.drafted;
      accepted[e] += out.stats.accepted;
    }
  }
  MESSAGE("accepted/drafted: same vocabulary "
          << accepted[0] << "/" << drafted[0] << ", text " << accepted[1] << "/" << drafted[1]
          << ", intersection " << accepted[2] << "/" << drafted[2]);
  // The shuffled draft is the same model. Through the intersection (here all of both
  // vocabularies) it drafts what the unshuffled one does, but for its context: the target's
  // text re-tokenized, which may split a word differently. Through text its drafts are
  // re-tokenized too, as the target's tokenizer splits them: a draft the model spelt in
  // pieces the target would not have chosen is proposed as one token.
  CHECK(accepted[2] * 10 >= accepted[0] * 9);
  CHECK(accepted[1] * 2 >= accepted[0]);
}

TEST_CASE("across vocabularies at temperature 1: a fixed seed gives the same output") {
  if (!shipped_models_present()) return;
  const std::string shuffled = test::temp_dir("cross-vocabulary-sampled") + "/draft-shuffled.gguf";
  bench::write_shuffled_vocabulary(kShippedDraft, shuffled, 7);
  PluginRegistry registry{{}};
  for (const std::string vocabulary : {"text", "intersection"}) {
    CAPTURE(vocabulary);
    std::vector<std::string> sampled = {"sampling.temperature=1", "engine.seed=11"};
    for (const std::string& o : drafting_with(shuffled, vocabulary)) sampled.push_back(o);
    const Config c = config(kShippedTarget, sampled);
    const GenerationResult a = Engine(c, registry).generate("Once upon a time");
    const GenerationResult b = Engine(c, registry).generate("Once upon a time");
    CHECK(a.tokens == b.tokens);
    CHECK(a.stats.drafted > 0);
    CHECK(a.stats.accepted > 0);
  }
}

// Two tokenizers that really differ: the shipped BPE models (4096 tokens with merges) and a
// random model over a byte-level vocabulary (264 tokens), each as the other's draft. A BPE
// draft's token becomes several byte tokens of the target, a byte draft's run of bytes is
// merged by the target's BPE. Output equals plain decoding either way.
TEST_CASE("drafts between a BPE vocabulary and a byte-level one, both ways") {
  const std::string &bpe_target = kShippedTarget, &bpe_draft = kShippedDraft;
  if (!shipped_models_present()) return;
  const std::string dir = test::temp_dir("cross-vocabulary-bytes");
  const std::string bytes = dir + "/bytes.gguf";
  test::RandomLlamaSpec spec;
  spec.seed = 9;
  test::write_random_llama(bytes, spec);
  PluginRegistry registry{{}};
  struct Pair {
    std::string target, draft;
  };
  for (const Pair& pair : {Pair{bpe_target, bytes}, Pair{bytes, bpe_draft}}) {
    CAPTURE(pair.target);
    const GenerationResult base =
        Engine(config(pair.target, {}), registry).generate("def fibonacci(n):");
    for (const std::string vocabulary : {"text", "intersection"}) {
      CAPTURE(vocabulary);
      const std::vector<std::string> across = drafting_with(pair.draft, vocabulary);
      const GenerationResult out =
          Engine(config(pair.target, across), registry).generate("def fibonacci(n):");
      CHECK(out.tokens == base.tokens);
      CHECK(out.stats.drafted > 0);
      std::vector<std::string> sampled = across;
      sampled.insert(sampled.end(), {"sampling.temperature=1", "engine.seed=5"});
      const GenerationResult a =
          Engine(config(pair.target, sampled), registry).generate("Once upon a time");
      const GenerationResult b =
          Engine(config(pair.target, sampled), registry).generate("Once upon a time");
      CHECK(a.tokens == b.tokens);
      CHECK(a.tokens.size() == 48u);
    }
  }
}
