// The JSON bodies the server answers with, in OpenAI's shapes: whole completions, streamed
// chunks (as server-sent events), usage and errors.
#pragma once

#include <cstdint>
#include <string>

#include "engine/generation_stats.hpp"

namespace specd::server {

struct ResponseInfo {
  std::string id;  // "cmpl-..." or "chatcmpl-..."
  std::string model;
  int64_t created = 0;  // Unix seconds
  bool chat = false;
};

// OpenAI's finish_reason for an engine stop reason: "stop" (eos, stop string), "length".
std::string finish_reason(const std::string& stop_reason);
// {"prompt_tokens", "completion_tokens", "total_tokens", "drafted_tokens",
//  "accepted_tokens", "tau"}
std::string usage_json(const GenerationStats& stats, size_t completion_tokens);
// The whole non-streamed response.
std::string completion_json(const ResponseInfo& info, const GenerationResult& result);
// One SSE event "data: <json>\n\n" carrying `text` (the first chat chunk also carries the
// role), or the last one with finish_reason when `finish` is non-empty.
std::string chunk_event(const ResponseInfo& info, const std::string& text, bool first,
                        const std::string& finish);
// The usage chunk (stream_options.include_usage): empty choices and the usage.
std::string usage_event(const ResponseInfo& info, const GenerationResult& result);
std::string done_event();  // "data: [DONE]\n\n"
// {"error": {"message", "type", "param", "code"}}
std::string error_json(const std::string& message, const std::string& type,
                       const std::string& param, const std::string& code);

}  // namespace specd::server
