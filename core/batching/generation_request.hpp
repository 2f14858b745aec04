// What the batching layer runs: a request already checked by the layer above (the HTTP
// server parses, encodes and bounds it once). The scheduler refuses only what it alone can
// know: a strategy that does not build, sampling its rule makes no claim for, a KV budget
// held elsewhere (batching/refusal.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace specd::batching {

// The strategy a request asks for, over the server's configured one: proposer, draft
// length and acceptance rule (the server's `speculative` request field). Unset members
// keep the configuration's.
struct StrategyChoice {
  std::optional<std::string> proposer;  // a proposer plugin id or name, or "none"
  std::optional<int> k;                 // draft length, 1..64
  bool k_auto = false;                  // k = "auto"
  std::optional<std::string> rule;      // an acceptance rule id
  bool allow_lossy = false;             // needed for a lossy rule; the server must allow it

  // Whether the request left the configured strategy as it is.
  bool configured() const { return !proposer && !k && !k_auto && !rule && !allow_lossy; }
};

struct GenerationRequest {
  // The prompt as the target reads it: at least one token, fewer than the context holds.
  std::vector<int32_t> prompt;
  // Tokens to generate at most; prompt + max_tokens within the context and the KV budget.
  int max_tokens = 0;
  SamplingConfig sampling;       // the server's [sampling] with the request's overrides
  std::optional<uint64_t> seed;  // the generator's seed; unset: [engine] seed
  // Alternatives per token in the logprob entries (0..20); -1: no logprobs.
  int logprobs = -1;
  StrategyChoice strategy;
  // The prefix-cache partition its prompt shares blocks in: 0, the shared one, or a key of
  // the request's cache_salt, so that only requests with the same salt share (and time).
  uint64_t prefix_partition = 0;
  // The request field its grammar came from ("grammar", "response_format", "tools"; "" for
  // the server's configured one), named when the grammar fails while it runs.
  std::string grammar_field;
};

}  // namespace specd::batching
