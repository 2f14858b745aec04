// Qwen3.5's chat template (its tokenizer.chat_template, as llama.cpp's test data holds it):
// ChatML turns, the generation prompt opening a <think> block, reasoning kept only in the
// assistant turns after the last user query (the message's reasoning_content where given,
// its content then left whole; else a <think> block the content starts with; "" counts as
// not given), and tool calls in XML:
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// with each value a string as is, an object or array as JSON, and other scalars as the
// template's Jinja prints them (True, False, None, numbers).
#pragma once

#include <string>
#include <vector>

#include "server/chat_template.hpp"

namespace specd::server {

// The conversation as Qwen3.5's template lays it out, ending with the assistant's turn and
// its <think> opened. Throws std::invalid_argument where the template raises (no user query,
// a system message after the first).
std::vector<ChatSegment> render_qwen35(const std::vector<ChatMessage>& messages,
                                       const std::vector<ToolFunction>& tools);

// One call's XML inside its <tool_call> block, <function=NAME>...</function> (arguments: the
// JSON text of an object).
std::string qwen35_call_body(const ToolCall& call);

}  // namespace specd::server
