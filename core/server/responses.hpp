// The JSON bodies the server answers with, in OpenAI's shapes: whole completions, streamed
// chunks (as server-sent events), usage and errors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/generation_stats.hpp"
#include "server/tool_calls.hpp"

namespace specd::server {

struct ResponseInfo {
  std::string id;  // "cmpl-..." or "chatcmpl-..."
  std::string model;
  int64_t created = 0;  // Unix seconds
  bool chat = false;
  int index = 0;          // the choice a chunk belongs to (n > 1)
  size_t per_prompt = 1;  // choices per prompt (n): a batch of prompts has n choices each
  // vLLM's continuous_usage_stats: each chunk carries the choice's usage so far.
  bool running_usage = false;
  uint64_t prompt_tokens = 0, completion_tokens = 0;
};

// A generated token's logprob entry with the texts of its token and alternatives (the
// tokenizer's pieces), as responses show them.
struct LogprobText {
  std::string token;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};
// Where a stream's logprobs stand: for completions' text_offset.
struct LogprobCursor {
  size_t text_offset = 0;
};

// OpenAI's finish_reason for an engine stop reason: "stop" (eos, stop string), "length".
std::string finish_reason(const std::string& stop_reason);
// With calls parsed from the output: "tool_calls" when it holds calls and ended by itself,
// else the stop reason's ("length" for calls cut by max_tokens).
std::string finish_reason(const std::string& stop_reason, const ParsedToolCalls& calls);
// {"prompt_tokens", "completion_tokens", "total_tokens", "drafted_tokens",
//  "accepted_tokens", "tau"}
std::string usage_json(const GenerationStats& stats, size_t completion_tokens);
// The whole non-streamed response, a choice per result (index in order); `logprobs` (per
// choice, one entry per generated token) when asked for: chat's {"content": [{token,
// logprob, bytes, top_logprobs}]}, completions' {tokens, token_logprobs, top_logprobs,
// text_offset}. Usage sums the choices' completions (each prompt counted once). With
// `tool_calls` (per choice; nullopt: none found, the text is content), a chat choice's
// message carries its calls, if any, content null when there is no other text, and its
// reasoning as reasoning_content (when there is some: harmony's analysis).
std::string completion_json(
    const ResponseInfo& info, const std::vector<const GenerationResult*>& choices,
    const std::vector<std::vector<LogprobText>>* logprobs = nullptr,
    const std::vector<std::optional<ParsedToolCalls>>* tool_calls = nullptr);
// A chat chunk whose delta carries whole calls: tool_calls [{index, id, type, function:
// {name, arguments}}] (OpenAI's stream shape, each call in one delta).
std::string tool_calls_event(const ResponseInfo& info, const std::vector<ToolCall>& calls,
                             bool first);
// The choices' results as one, for usage: each prompt's tokens once (choices come
// `per_prompt` to a prompt, in order), every choice's tokens and drafting counts.
GenerationResult combined_usage(const std::vector<const GenerationResult*>& choices,
                                size_t per_prompt = 1);
// One SSE event "data: <json>\n\n" carrying `text` (the first chat chunk also carries the
// role), or the last one with finish_reason when `finish` is non-empty; with `logprobs`, the
// entries of the tokens emitted since the previous chunk. A chat chunk with `reasoning`
// carries it as delta.reasoning_content (and content only when `text` is not empty).
std::string chunk_event(const ResponseInfo& info, const std::string& text, bool first,
                        const std::string& finish,
                        const std::vector<LogprobText>* logprobs = nullptr,
                        LogprobCursor* cursor = nullptr, const std::string& reasoning = {});
// The usage chunk (stream_options.include_usage): empty choices and the usage (of
// combined_usage for n > 1).
std::string usage_event(const ResponseInfo& info, const GenerationResult& result);
std::string done_event();  // "data: [DONE]\n\n"
// OpenAI's error type for an HTTP status: authentication_error, not_found_error,
// server_overloaded (503), server_error, invalid_request_error.
std::string error_type(int status);
// {"error": {"message", "type", "param", "code"}}, the message with the server's paths hidden
// (client_redaction.hpp; the log keeps the original).
std::string error_json(const std::string& message, const std::string& type,
                       const std::string& param, const std::string& code);

}  // namespace specd::server
