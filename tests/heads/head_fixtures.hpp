// The heads suites' shared files and runs: random targets, the three kinds of head bound to
// one, and the head proposer configurations compared with plain decoding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "random_heads.hpp"
#include "random_llama.hpp"

namespace specd::test {

// Writes a random llama target of `seed` (named "random-llama-<seed>") to `path`.
inline void write_random_target(const std::string& path, uint64_t seed) {
  RandomLlamaSpec spec;
  spec.seed = seed;
  write_random_llama(path, spec);
}

// Writes random Medusa, EAGLE and MTP heads bound to `target` into `dir` (medusa.gguf,
// eagle.gguf, mtp.gguf).
inline void write_random_heads(const std::string& dir, const std::string& target, uint64_t seed) {
  RandomHeadSpec hs;
  hs.seed = seed;
  write_random_medusa(dir + "/medusa.gguf", target, hs);
  write_random_eagle(dir + "/eagle.gguf", target, hs);
  write_random_mtp(dir + "/mtp.gguf", target, hs);
}

// Each head proposer configuration over the heads in `dir`: MTP sampled and greedy, Medusa
// with its default and with explicit tree choices, EAGLE with its default and a small tree.
inline std::vector<std::vector<std::string>> head_runs(const std::string& dir) {
  return {
      {"proposer.kind=mtp", "proposer.k=4", "proposer.model=\"" + dir + "/mtp.gguf\""},
      {"proposer.kind=mtp", "proposer.k=3", "proposer.model=\"" + dir + "/mtp.gguf\"",
       "proposer.mode=\"greedy\""},
      {"proposer.kind=medusa", "proposer.model=\"" + dir + "/medusa.gguf\""},
      {"proposer.kind=medusa", "proposer.model=\"" + dir + "/medusa.gguf\"",
       "proposer.choices=[[0], [0, 0], [1], [0, 1], [2], [0, 0, 0]]"},
      {"proposer.kind=eagle", "proposer.model=\"" + dir + "/eagle.gguf\""},
      {"proposer.kind=eagle", "proposer.model=\"" + dir + "/eagle.gguf\"", "proposer.depth=3",
       "proposer.top_k=2", "proposer.max_nodes=5"},
  };
}

}  // namespace specd::test
