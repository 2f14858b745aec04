// What one generation measured (the definitions follow vLLM and Spec-Bench; docs/BENCH.md,
// "How the numbers are made").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace specd {

struct GenerationStats {
  uint64_t prompt_tokens = 0;
  uint64_t generated_tokens = 0;
  uint64_t rounds = 0;    // target passes after the prompt (one per round)
  uint64_t drafted = 0;   // draft nodes proposed, all rounds
  uint64_t accepted = 0;  // draft nodes accepted, all rounds
  // Per depth d (0-based): rounds whose draft reached depth d, and how many of those
  // accepted a node at depth d.
  std::vector<uint64_t> drafted_at;
  std::vector<uint64_t> accepted_at;
  double prefill_s = 0;      // prompt processing (the first target pass)
  double draft_s = 0;        // proposer time
  double verify_s = 0;       // target passes + the sampling transform of their logits
  double accept_s = 0;       // acceptance rule
  double commit_s = 0;       // the accepted path's commit (a hybrid target's state restore)
  double generate_s = 0;     // everything after the prompt
  double first_token_s = 0;  // from the start of the request to the first generated token

  // τ: mean tokens emitted per target pass, the bonus/correction token included.
  double tau() const { return rounds ? double(generated_tokens) / double(rounds) : 0; }
  // α: accepted / drafted (0 when nothing was drafted).
  double acceptance_rate() const { return drafted ? double(accepted) / double(drafted) : 0; }
  double tokens_per_s() const { return generate_s > 0 ? double(generated_tokens) / generate_s : 0; }
  double prefill_tokens_per_s() const {
    return prefill_s > 0 ? double(prompt_tokens) / prefill_s : 0;
  }
  std::vector<double> per_position() const;
};

// A generated token's log-probability under the target model: the log-softmax of the raw
// logits of the row that verified it (before penalties, logit_bias, temperature and the
// filters, as OpenAI and vLLM report it), and the `top` most likely tokens of that row
// (descending, lowest id first on ties). The row's bits are the same with and without
// speculation (batch invariance), so are these.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
};

struct GenerationResult {
  // text: decode(prompt + tokens) minus decode(prompt), invalid UTF-8 shown as U+FFFD.
  std::string text;             // the continuation only
  std::vector<int32_t> tokens;  // its token ids
  std::string stop_reason;      // "eos", "stop", "length", "context", "interrupted"
  std::string stop_string;      // stop_reason "stop": the stop string that ended it
  GenerationStats stats;
  std::vector<TokenLogprob> logprobs;  // one per token, when asked for (Sequence::set_logprobs)
};

}  // namespace specd
