// An OpenAI-style completion or chat request, parsed and checked into a typed request.
// Every problem is a RequestError naming the field (OpenAI's "param"), never a crash.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "batching/generation_request.hpp"
#include "batching/refusal.hpp"
#include "config/config.hpp"
#include "server/chat_template.hpp"
#include "server/tool_request.hpp"

namespace specd::server {

// An HTTP error answered with OpenAI's error body: {"error": {message, type, param, code}}.
class RequestError : public std::runtime_error {
 public:
  RequestError(int status, std::string param, const std::string& message,
               std::string code = "invalid_request_error")
      : std::runtime_error(message),
        status(status),
        param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string param;  // the field concerned ("" when none)
  std::string code;
};

// A completion prompt as sent: text, or token ids (OpenAI's arrays of integers), taken as
// given (no BOS added).
struct PromptInput {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

// One prompt as the engine reads it, set by prepare_prompt before queueing.
struct PreparedPrompt {
  // Chat content encoded as plain text, never as special tokens.
  std::vector<int32_t> tokens;
  int max_tokens = 0;  // the request's, clamped to the room this prompt leaves
  std::string echo;    // completions with `echo`: the prompt's text, put before each choice's
};

struct CompletionRequest {
  bool chat = false;
  std::string model;                  // "" when not given
  std::vector<PromptInput> prompts;   // completions: one, or several answered as one batch
  std::vector<ChatMessage> messages;  // chat
  ToolRequest tools;                  // chat: the functions the model may call
  // chat: "low", "medium" or "high" (OpenAI's reasoning_effort; "" = not given). Only the
  // harmony family has the setting; prepare_prompt refuses it for the others.
  std::string reasoning_effort;
  SamplingConfig sampling;    // the server's [sampling] with the request's overrides
  std::string grammar_field;  // where sampling.grammar came from (GenerationRequest)
  int max_tokens = 0;
  std::optional<uint64_t> seed;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats (vLLM)
  bool echo = false;              // completions: the prompt's text before each choice's
  // Alternatives per token in `logprobs` (0..20); -1: no logprobs. Completions' `logprobs: N`,
  // chat's `logprobs: true` with `top_logprobs: N`.
  int logprobs = -1;
  int n = 1;  // choices from the one prompt (1..128; [server] max_n caps it)
  batching::StrategyChoice speculative;  // the `speculative` extension
  // Shares cached prompt blocks only with requests of the same salt (vLLM's field; "": with
  // every unsalted request). See cache_salt.hpp.
  std::string cache_salt;
  // One per prompt (a chat has one), set by prepare_prompt.
  std::vector<PreparedPrompt> prepared;
  // Set by prepare_prompt for a harmony chat whose tool_choice forces a call: the function
  // whose call the prompt opens (the output is then its arguments alone).
  std::string opened_call;

  // Choices in all: n for each prompt.
  size_t choices() const { return std::max<size_t>(prompts.size(), 1) * static_cast<size_t>(n); }
  // What the batching layer runs of prompt `index` (prepared set).
  batching::GenerationRequest generation(size_t index = 0) const;
};

// The HTTP answer to the batching layer's refusal: 400 for an invalid request, 503 to retry
// later, 500 for an internal failure. A chat request's prompt is its `messages`.
RequestError request_error(const batching::Refusal& refusal, bool chat);

// Parses a body of POST /v1/completions (chat = false) or /v1/chat/completions (chat = true).
// `defaults` supplies what the request leaves out. Throws RequestError (400) naming the field.
CompletionRequest parse_completion_request(std::string_view body, bool chat,
                                           const SamplingConfig& defaults);

}  // namespace specd::server
