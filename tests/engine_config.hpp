// What the engine suites share: a greedy one-thread run on the backend under test, and token
// ids as text for the messages that compare two runs.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace specd::test {

// The backend under test: cpu, or the one SPECD_TEST_BACKEND names (bench/gpu-check.sh runs
// the engine suites on a GPU that way).
inline std::string test_backend() {
  const char* b = std::getenv("SPECD_TEST_BACKEND");
  return b && *b ? b : "cpu";
}

// `model` decoded greedily on `backend` (by default the one under test) with one thread,
// ignoring EOS, for `max_tokens` tokens (0: the config's default), then `overrides`
// (key=value, as --set).
inline Config greedy_config(const std::string& model, const std::vector<std::string>& overrides,
                            int max_tokens = 0, const std::string& backend = test_backend()) {
  std::vector<std::string> all = {"target.model=\"" + model + "\"", "engine.backend=" + backend,
                                  "engine.threads=1", "sampling.temperature=0",
                                  "sampling.ignore_eos=true"};
  if (max_tokens > 0) all.push_back("sampling.max_tokens=" + std::to_string(max_tokens));
  all.insert(all.end(), overrides.begin(), overrides.end());
  return parse_config("", "test.toml", all);
}

// Prompts of code, prose, repetition and a single character, for runs that must agree.
inline const std::vector<std::string> kEnginePrompts = {
    "def fibonacci(n):",
    "The quick brown fox",
    "import os\nimport sys\n\nfor",
    "aaaa bbbb aaaa bbbb aaaa",
    "x",
    "Speculative decoding verifies several tokens in one pass.",
};

// "3,1,4": token ids as the messages of a failed comparison show them.
inline std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t t : ids) {
    if (!s.empty()) s += ',';
    s += std::to_string(t);
  }
  return s;
}

}  // namespace specd::test
