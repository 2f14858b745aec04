// llama.cpp's speculative rounds (its llama-server's drafts and verdicts, as the reference
// scripts of tests/compat record them) against specd's rounds on the same prompts.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../bench/json_parse.hpp"
#include "engine/engine.hpp"

namespace specd::test {

inline std::vector<int32_t> ints(const Json& array) {
  std::vector<int32_t> v;
  for (const Json& x : array.a) v.push_back(static_cast<int32_t>(x.n));
  return v;
}

// One round as specd ran it: where its first drafted token sits in the sequence, the chain
// drafted and how many were accepted.
struct Round {
  size_t start = 0;
  std::vector<int32_t> chain;
  uint64_t accepted = 0;
};

// Runs each case of `cases` (llama.cpp's output for one prompt) through `spec` and `plain`:
// greedy output equal to plain's and to llama.cpp's, and each round that starts where one of
// llama.cpp's starts drafts the same chain (both cut at the budget) and accepts as many.
// Returns how many rounds were compared and how many llama.cpp ran.
inline std::pair<size_t, size_t> compare_rounds(Engine& spec, Engine& plain, const Json& cases) {
  size_t compared = 0, llama_rounds = 0;
  for (const Json& c : cases.a) {
    const std::string& prompt = c["prompt"].s;
    CAPTURE(prompt);
    std::vector<Round> ours;
    size_t generated = 0;
    GenerateOptions options;
    const GenerationResult base = plain.generate(prompt);
    options.on_round = [&](std::span<const int32_t> tokens, std::span<const int32_t> parents,
                           uint64_t accepted) {
      Round r;
      r.start = base.stats.prompt_tokens + generated;
      for (size_t i = 0; i < tokens.size(); ++i) {
        REQUIRE(parents[i] == static_cast<int32_t>(i));  // a chain, in order
        r.chain.push_back(tokens[i]);
      }
      r.accepted = accepted;
      generated += accepted + 1;
      ours.push_back(r);
    };
    const GenerationResult out = spec.generate(prompt, options);
    // Greedy equality: with plain decoding, and with llama.cpp's output.
    CHECK(out.tokens == base.tokens);
    CHECK(out.tokens == ints(c["tokens"]));
    REQUIRE(out.stats.prompt_tokens == static_cast<uint64_t>(c["prompt_n"].n));

    // llama.cpp's rounds: its prompt pass gives the first token, so its round j drafts from
    // sequence index prompt_n + 1 + (tokens emitted by its earlier rounds).
    std::map<size_t, std::pair<std::vector<int32_t>, uint64_t>> theirs;
    size_t at = static_cast<size_t>(c["prompt_n"].n) + 1;
    const Json& drafts = c["drafts"];
    const Json& accepted = c["accepted"];
    REQUIRE(drafts.a.size() == accepted.a.size());
    for (size_t j = 0; j < drafts.a.size(); ++j) {
      theirs[at] = {ints(drafts.a[j]), static_cast<uint64_t>(accepted.a[j].n)};
      at += static_cast<size_t>(accepted.a[j].n) + 1;
    }
    llama_rounds += theirs.size();
    for (const Round& r : ours) {
      auto it = theirs.find(r.start);
      if (it == theirs.end() || r.chain.empty()) continue;
      const std::vector<int32_t>& chain = it->second.first;
      const size_t n = std::min(chain.size(), r.chain.size());  // both cut at the budget
      CAPTURE(r.start);
      CAPTURE(r.chain.size());
      CAPTURE(chain.size());
      CHECK(std::vector<int32_t>(r.chain.begin(), r.chain.begin() + n) ==
            std::vector<int32_t>(chain.begin(), chain.begin() + n));
      if (chain.size() == r.chain.size()) CHECK(r.accepted == it->second.second);
      ++compared;
    }
  }
  return {compared, llama_rounds};
}

}  // namespace specd::test
