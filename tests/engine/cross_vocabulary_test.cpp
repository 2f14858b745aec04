// Drafting across vocabularies ([proposer] vocabulary = "text" / "intersection"): the shipped
// draft with its token ids shuffled (every tensor row and tokenizer entry moved with its id)
// has a vocabulary that differs from the target's id for id but spells the same texts. It is
// refused as a same-vocabulary draft, and across vocabularies it drafts what the unshuffled
// draft drafts: output equals plain greedy output, and acceptance stays close to the
// unshuffled draft's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "gguf/gguf_reader.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "test_skip.hpp"
#include "writers/gguf_writer.hpp"

using namespace specd;

namespace {

// `from` with its token ids permuted: new id = perm[old id].
void write_shuffled_vocabulary(const std::string& from, const std::string& to) {
  const GgufFile file = GgufFile::open(from);
  const size_t n = file.find("tokenizer.ggml.tokens")->array_size();
  std::vector<uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(7));
  GgufWriter w;
  for (const auto& [key, value] : file.metadata()) {
    if (key == "general.alignment") continue;
    if (key == "tokenizer.ggml.tokens" || key == "tokenizer.ggml.scores" ||
        key == "tokenizer.ggml.token_type") {
      const std::vector<GgufValue> old = value.elements();
      std::vector<GgufValue> moved(old.size());
      for (size_t i = 0; i < old.size(); ++i) moved[perm[i]] = old[i];
      w.set(key, GgufValue::make_array(value.elem_type, moved));
    } else if (key.starts_with("tokenizer.ggml.") && key.ends_with("_token_id")) {
      w.set_u32(key, perm[*value.as_uint64()]);
    } else {
      w.set(key, value);
    }
  }
  w.set_alignment(file.alignment());
  for (const GgufTensor& t : file.tensors()) {
    const auto* bytes = static_cast<const uint8_t*>(t.data);
    std::vector<uint8_t> data(bytes, bytes + t.n_bytes);
    if (t.name == "token_embd.weight" || t.name == "output.weight") {
      const size_t row = t.n_bytes / static_cast<size_t>(t.ne[1]);
      for (size_t i = 0; i < n; ++i)
        std::copy_n(bytes + i * row, row, data.begin() + static_cast<std::ptrdiff_t>(perm[i] * row));
    }
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                 std::move(data));
  }
  w.write(to);
}

Config config(const std::string& target, const std::vector<std::string>& extra) {
  std::vector<std::string> all = {"target.model=\"" + target + "\"", "engine.backend=cpu",
                                  "engine.threads=1", "sampling.temperature=0",
                                  "sampling.ignore_eos=true", "sampling.max_tokens=48"};
  all.insert(all.end(), extra.begin(), extra.end());
  return parse_config("", "test.toml", all);
}

}  // namespace

TEST_CASE("a draft of another vocabulary: refused as shared, exact across" * SPECD_MAY_SKIP) {
  const std::string models = std::string(SPECD_SOURCE_DIR) + "/models";
  const std::string target = models + "/target.gguf", draft = models + "/draft.gguf";
  if (!std::filesystem::exists(target) || !std::filesystem::exists(draft)) {
    ::specd::test::skip_missing(target, " or draft.gguf is missing");
    return;
  }
  const std::string dir = test::temp_dir("cross-vocabulary");
  const std::string shuffled = dir + "/draft-shuffled.gguf";
  write_shuffled_vocabulary(draft, shuffled);
  PluginRegistry registry{{}};
  const auto with_draft = [&](const std::string& model, const std::string& vocabulary) {
    std::vector<std::string> extra = {"proposer.kind=\"draft-model\"",
                                      "proposer.model=\"" + model + "\"", "proposer.k=4"};
    if (!vocabulary.empty()) extra.push_back("proposer.vocabulary=\"" + vocabulary + "\"");
    return config(target, extra);
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
  MESSAGE("accepted/drafted: same vocabulary " << accepted[0] << "/" << drafted[0] << ", text "
                                               << accepted[1] << "/" << drafted[1]
                                               << ", intersection " << accepted[2] << "/"
                                               << drafted[2]);
  // The shuffled draft is the same model. Through the intersection (here all of both
  // vocabularies) it drafts what the unshuffled one does, but for its context: the target's
  // text re-tokenized, which may split a word differently. Through text its drafts are
  // re-tokenized too, as the target's tokenizer splits them: a draft the model spelt in
  // pieces the target would not have chosen is proposed as one token.
  CHECK(accepted[2] * 10 >= accepted[0] * 9);
  CHECK(accepted[1] * 2 >= accepted[0]);
}

TEST_CASE("across vocabularies at temperature 1: a fixed seed gives the same output") {
  const std::string models = std::string(SPECD_SOURCE_DIR) + "/models";
  const std::string target = models + "/target.gguf", draft = models + "/draft.gguf";
  if (!std::filesystem::exists(target) || !std::filesystem::exists(draft)) return;
  const std::string dir = test::temp_dir("cross-vocabulary-sampled");
  const std::string shuffled = dir + "/draft-shuffled.gguf";
  write_shuffled_vocabulary(draft, shuffled);
  PluginRegistry registry{{}};
  for (const std::string vocabulary : {"text", "intersection"}) {
    CAPTURE(vocabulary);
    const Config c = config(target, {"sampling.temperature=1", "engine.seed=11",
                                     "proposer.kind=\"draft-model\"",
                                     "proposer.model=\"" + shuffled + "\"", "proposer.k=4",
                                     "proposer.vocabulary=\"" + vocabulary + "\""});
    const GenerationResult a = Engine(c, registry).generate("Once upon a time");
    const GenerationResult b = Engine(c, registry).generate("Once upon a time");
    CHECK(a.tokens == b.tokens);
    CHECK(a.stats.drafted > 0);
    CHECK(a.stats.accepted > 0);
  }
}
