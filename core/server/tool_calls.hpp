// Tool calls in a chat model's output, in the format of its template family:
//   chatml (Qwen2.5, Hermes): <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>,
//                             one block per call, text around them is content;
//   llama3 (Llama 3.1):       the whole answer is {"name": ..., "parameters": {...}}
//                             (after an optional <|python_tag|>);
//   mistral (v3):             the whole answer is [{"name": ..., "arguments": {...}}, ...]
//                             (after an optional [TOOL_CALLS]);
//   qwen3.5:                  <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>
//                             ...</function>\n</tool_call> blocks, as chatml's around them.
// A call must name one of the request's tools and carry an object of arguments; an output
// that does not hold well-formed calls is plain content (a model may answer in words).
// `tool_choice` "required" or a named function forces calls with a grammar over exactly
// these shapes, each call's arguments constrained by its function's JSON Schema.
//
// Thread rule: pure functions; a ToolCallStream is one choice's, one thread at a time.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/chat_template.hpp"
#include "server/tool_request.hpp"

namespace specd::server {

struct ParsedToolCalls {
  std::string content;  // the text outside the calls, trimmed ("" = none)
  std::vector<ToolCall> calls;
};

// The calls in a finished output; nullopt when it holds none. Call ids are "call_" and
// nine letters and digits derived from `id_seed` and the call's index.
std::optional<ParsedToolCalls> parse_tool_calls(ChatFamily family, std::string_view text,
                                                const std::vector<ToolFunction>& tools,
                                                const std::string& id_seed);

// GBNF whose sentences are calls of the family's format to the request's tools (only the
// named one for a named tool_choice; one call unless parallel_tool_calls, and always one
// for llama3). Throws RequestError (400, "tools[i].function.parameters") for a schema the
// grammar cannot enforce.
std::string tool_call_grammar(ChatFamily family, const ToolRequest& request);

// Streaming: content goes out as it comes until the output may be a call, then the rest is
// held back, to be parsed when the output ends.
class ToolCallStream {
 public:
  ToolCallStream(ChatFamily family, bool active) : family_(family), active_(active) {}
  // The part of the text so far that can be streamed now as content.
  std::string feed(const std::string& piece);
  // What was held back (a call, or text that looked like the start of one).
  const std::string& held() const { return held_; }

 private:
  ChatFamily family_;
  bool active_;
  bool holding_ = false;    // a call has started: hold everything
  bool streaming_ = false;  // the answer is words: stream everything
  std::string held_;
};

}  // namespace specd::server
