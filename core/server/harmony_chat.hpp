// gpt-oss's chat format, OpenAI's "harmony", as its GGUF's chat template lays it out
// (tests/server/harmony_chat/openai-gpt-oss-120b.jinja, llama.cpp's copy of the template in
// openai/gpt-oss-120b). Every message is <|start|>ROLE<|channel|>CHANNEL<|message|>TEXT<|end|>:
//   <|start|>system<|message|>   the model's identity, knowledge cutoff, current date,
//                                "Reasoning: low|medium|high" and the valid channels
//   <|start|>developer<|message|> "# Instructions" (the request's system message) and
//                                "# Tools" (harmony_tools.hpp)
//   <|start|>user<|message|>...<|end|>
//   <|start|>assistant<|channel|>final<|message|>...<|end|>     an earlier answer
//   <|start|>assistant<|channel|>analysis<|message|>...<|end|>  reasoning, kept only before a
//                                tool call that no later answer follows
//   <|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>ARGS<|call|>
//   <|start|>functions.NAME to=assistant<|channel|>commentary<|message|>RESULT<|end|>
// and the generation prompt <|start|>assistant. What the model writes back is read by
// harmony_output.hpp.
//
// Where specd departs from the template, on purpose:
//  - "Current date" is today in UTC (the template's strftime_now is the server's local time);
//    the date is an option, so a caller (a test) can fix it.
//  - A tool result is written as it is. The template applies `tojson` to it, which for the
//    string an OpenAI client sends writes a quoted, escaped string (llama.cpp issue 19520);
//    harmony itself, and OpenAI's renderer the model was trained with, carry the text as is.
//  - A call's arguments are the JSON object, as `tojson` prints an object (never the quoted
//    text of the string a client sends them as).
//  - Every call of an assistant message is written, each as its own message (harmony's form
//    for parallel calls; the template writes only the first), and a tool result names the
//    function of the call its tool_call_id answers.
//  - A system message other than the first is refused: the template would drop it silently.
//  - An assistant message with calls may carry content and reasoning_content both (the
//    template raises): harmony_output.hpp reads them so from an analysis, a commentary
//    preamble and a call, and a client sends that message back. It is written in harmony's
//    own form: the analysis (kept as the template keeps it), the content as a commentary
//    message <|start|>assistant<|channel|>commentary<|message|>...<|end|> (kept, as an
//    answer's text is), then the calls. With one of the two, it is the analysis, as in the
//    template.
//  - A call with an empty id names no call: a tool result whose tool_call_id is empty is named
//    by the latest call, as the template names every result.
//  - Keys stay in the client's order (the request keeps a tool's parameters and a call's
//    arguments so, as transformers' `tojson` does): the TypeScript signature lists the
//    properties in their order, a call's arguments are printed in theirs.
//
// Thread rule: pure functions.
#pragma once

#include <string>
#include <vector>

#include "server/chat_template.hpp"

namespace specd::server {

// The conversation as gpt-oss's template lays it out, ending with <|start|>assistant.
// Throws std::invalid_argument where the template raises (channel markers in an assistant's
// content or reasoning, a tool result with no call before it) or would lose a message (a
// later system message).
std::vector<ChatSegment> render_harmony(const std::vector<ChatMessage>& messages,
                                        const std::vector<ToolFunction>& tools,
                                        const ChatOptions& options);

// What follows the generation prompt to open a call to `name` (a forced tool_choice: the
// model then writes only its arguments): the header gpt-oss itself writes for a call,
// <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>.
std::string harmony_call_opening(const std::string& name);

// Today's date in UTC, "YYYY-MM-DD".
std::string harmony_utc_date();

}  // namespace specd::server
