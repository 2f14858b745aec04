// Tool calls in a chat model's output, in the format of its template family:
//   chatml (Qwen2.5, Hermes): <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>,
//                             one block per call, text around them is content;
//   llama3 (Llama 3.1):       the whole answer is {"name": ..., "parameters": {...}}
//                             (after an optional <|python_tag|>);
//   mistral (v3):             the whole answer is [{"name": ..., "arguments": {...}}, ...]
//                             (after an optional [TOOL_CALLS]);
//   qwen3.5:                  <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>
//                             ...</function>\n</tool_call> blocks, as chatml's around them;
//   harmony (gpt-oss):        messages to functions.NAME (harmony_output.hpp, which also
//                             splits the reasoning from the content).
// A call must name one of the request's tools and carry an object of arguments; an output
// that does not hold well-formed calls is plain content (a model may answer in words).
// `tool_choice` "required" or a named function forces calls with a grammar over exactly
// these shapes, each call's arguments constrained by its function's JSON Schema: a named
// choice allows one call, "required" one or (with parallel_tool_calls) more, and the
// grammar then allows only the end of the turn. Harmony's calls begin with control tokens
// that a grammar over token texts cannot produce, so there the prompt opens the call itself
// (harmony_call_opening) and the grammar forces its arguments: a named choice, or "required"
// with one tool; "required" with several tools is refused.
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
  std::string content;  // the text outside the calls, trimmed ("" = none; harmony: as written)
  std::vector<ToolCall> calls;
  std::string reasoning = {};  // harmony: the analysis channel's text ("" = none)
};

// A call's id: "call_" and nine letters and digits derived from `seed` and its index.
std::string tool_call_id(const std::string& seed, size_t index);

// The calls in a finished output; nullopt when it holds none. Call ids are tool_call_id's of
// `id_seed` and the call's index.
std::optional<ParsedToolCalls> parse_tool_calls(ChatFamily family, std::string_view text,
                                                const std::vector<ToolFunction>& tools,
                                                const std::string& id_seed);

// The calls in an output that a forcing grammar produced: every whole call (for chatml and
// qwen3.5, whose calls are blocks; for llama3 and mistral a cut output has none); a call
// cut off by the length limit is dropped and nothing of it becomes content. `content` and
// `reasoning` are always empty. Harmony's output is the arguments of the call the prompt
// opened, `opened_call` (tool_call_grammar's): std::invalid_argument without it.
ParsedToolCalls forced_tool_calls(ChatFamily family, std::string_view text,
                                  const std::vector<ToolFunction>& tools,
                                  const std::string& id_seed, const std::string& opened_call = "");

// GBNF whose sentences are calls of the family's format to the request's tools (only the
// named one for a named tool_choice; one call for a named choice, for llama3, and unless
// parallel_tool_calls); for harmony, the arguments of harmony_forced_function's call, whose
// name goes to `opened_call` (the prompt must open that call). Throws RequestError (400,
// "tools[i].function.parameters") for a schema the grammar cannot enforce.
std::string tool_call_grammar(ChatFamily family, const ToolRequest& request,
                              std::string* opened_call = nullptr);

// Harmony: the function whose call a forced request's prompt opens (the named one, or the
// only tool). Throws RequestError (400, "tool_choice") for "required" with several tools.
std::string harmony_forced_function(const ToolRequest& request);

// Streaming: content goes out as it comes until the output may be a call, then the rest is
// held back, to be parsed when the output ends. With `forced` calls everything is held.
// Harmony's output is read by HarmonyStream instead: here it passes through.
class ToolCallStream {
 public:
  ToolCallStream(ChatFamily family, bool active, bool forced = false)
      : family_(family), active_(active), holding_(active && forced) {}
  // The part of the text so far that can be streamed now as content.
  std::string feed(const std::string& piece);
  // What was held back (a call, or text that looked like the start of one).
  const std::string& held() const { return held_; }

 private:
  ChatFamily family_;
  bool active_;
  bool holding_;            // a call has started (or is forced): hold everything
  bool streaming_ = false;  // the answer is words: stream everything
  std::string held_;
};

}  // namespace specd::server
