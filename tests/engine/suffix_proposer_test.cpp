// Suffix decoding (strategies/suffix): the bounded-depth suffix trie's counts and matches,
// and the proposer through the engine: output equal to plain greedy decoding, and, with
// global = true, drafts learnt from an earlier request's output.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../../strategies/suffix/suffix_trie.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine_config.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"

using namespace specd;
using specd::strategies::SuffixTrie;

namespace {

// The node of `path` from the root, or -1.
int32_t find(const SuffixTrie& t, const std::vector<int32_t>& path) {
  int32_t n = 0;
  for (int32_t token : path)
    if (n >= 0) n = t.child(n, token);
  return n;
}

Config config(const std::string& model, const std::vector<std::string>& extra) {
  return test::greedy_config(model, extra, 40, "cpu");
}

}  // namespace

TEST_CASE("suffix trie: windows of up to depth tokens, counted, never across sequences") {
  SuffixTrie t(3);
  t.push(std::vector<int32_t>{1, 2, 1, 2, 3});
  CHECK(t.node(find(t, {1})).count == 2);
  CHECK(t.node(find(t, {1, 2})).count == 2);
  CHECK(t.node(find(t, {2, 1, 2})).count == 1);
  CHECK(find(t, {1, 2, 1, 2}) == -1);  // deeper than 3
  CHECK(find(t, {3}) > 0);
  t.end_sequence();
  t.push(std::vector<int32_t>{9, 1});
  CHECK(find(t, {3, 9}) == -1);  // no window spans the two sequences
  CHECK(t.node(find(t, {1})).count == 3);
  // The longest end of the context with a continuation: "1 2" was followed by 1 and 3.
  const auto [node, length] = t.longest_match(std::vector<int32_t>{7, 1, 2}, 8);
  CHECK(length == 2);
  CHECK(node == find(t, {1, 2}));
  CHECK(t.longest_match(std::vector<int32_t>{5}, 8).second == 0);
}

TEST_CASE("suffix decoding: greedy output equals plain; global tries learn earlier outputs") {
  const std::string dir = test::temp_dir("suffix");
  PluginRegistry registry{{}};
  test::RandomLlamaSpec spec;
  spec.seed = 5;
  const std::string model = dir + "/random.gguf";
  test::write_random_llama(model, spec);
  Engine plain(config(model, {}), registry);
  Engine suffix(config(model, {"proposer.kind=\"suffix\"", "proposer.k=8"}), registry);
  Engine learning(config(model, {"proposer.kind=\"suffix\"", "proposer.k=8", "proposer.global=true",
                                 "proposer.factor=2.0"}),
                  registry);
  uint64_t drafted = 0;
  for (const std::string prompt :
       {"def fibonacci(n):", "aaaa bbbb aaaa bbbb aaaa", "import os\nimport sys\n\nfor", "x"}) {
    CAPTURE(prompt);
    const GenerationResult base = plain.generate(prompt);
    const GenerationResult out = suffix.generate(prompt);
    CHECK(out.tokens == base.tokens);
    drafted += out.stats.drafted;
    // The same request twice: the second one finds the first one's output in the shared trie.
    const GenerationResult first = learning.generate(prompt);
    const GenerationResult second = learning.generate(prompt);
    CHECK(first.tokens == base.tokens);
    CHECK(second.tokens == base.tokens);
    CHECK(second.stats.accepted > first.stats.accepted);
    CHECK(second.stats.rounds < first.stats.rounds);
  }
  CHECK(drafted > 0);
  CHECK_THROWS_WITH_AS(
      Engine(config(model, {"proposer.kind=\"suffix\"", "proposer.max_depth=1"}), registry),
      doctest::Contains("max_depth"), UsageError);
}
