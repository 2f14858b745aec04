// The shipped models (models/target.gguf, models/draft.gguf) for the suites that run on them,
// and the greedy speculative configuration those suites start from.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"

namespace specd::test {

inline const std::string kShippedModels = std::string(SPECD_SOURCE_DIR) + "/models";

// Whether the shipped target and draft are both present; otherwise the case is reported as
// skipped (and fails under SPECD_NO_SKIP), never as passed.
inline bool have_shipped_models() {
  if (std::filesystem::exists(kShippedModels + "/target.gguf") &&
      std::filesystem::exists(kShippedModels + "/draft.gguf"))
    return true;
  skip_missing("the shipped models are missing from ", kShippedModels);
  return false;
}

// The shipped pair on one CPU thread, greedy, ignoring EOS: the draft model drafting k = 3
// for the rejection rule, `max_tokens` tokens, then `extra` (key=value, as --set).
inline Config shipped_pair_config(int max_tokens, const std::vector<std::string>& extra) {
  std::vector<std::string> o = {"engine.backend=\"cpu\"",
                                "engine.threads=1",
                                "target.model=\"" + kShippedModels + "/target.gguf\"",
                                "proposer.kind=\"draft-model\"",
                                "proposer.model=\"" + kShippedModels + "/draft.gguf\"",
                                "proposer.k=3",
                                "acceptance.rule=\"rejection\"",
                                "sampling.temperature=0",
                                "sampling.max_tokens=" + std::to_string(max_tokens),
                                "sampling.ignore_eos=true"};
  o.insert(o.end(), extra.begin(), extra.end());
  return parse_config("", "test.toml", o);
}

// A whole file as text ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace specd::test
