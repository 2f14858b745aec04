// Chat templates: the prompt layout of the common model families, recognised from the
// Jinja text a GGUF carries in tokenizer.chat_template (no Jinja is evaluated). A template
// that matches no family is refused rather than guessed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::server {

enum class ChatFamily { chatml, llama3, mistral, phi3, gemma, qwen35, harmony };

// A function call the assistant made (OpenAI's tool_calls[i]).
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text of an object
};

// A function the model may call (OpenAI's tools[i].function).
struct ToolFunction {
  std::string name;
  std::string description;
  std::string parameters;  // JSON text of its JSON Schema ("{}" when not given)
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  std::vector<ToolCall> tool_calls = {};  // assistant: the calls it made
  std::string tool_call_id = {};          // tool: the call this answers
  // assistant: its reasoning (the request's reasoning_content; "" = none). Only the families
  // whose templates hold reasoning render it (family_has_reasoning): harmony as an earlier
  // turn's analysis, qwen3.5 as the <think> block of a turn after the last user query.
  std::string reasoning = {};
};

// What a chat request sets beyond its messages and tools; only the harmony family reads it.
struct ChatOptions {
  std::string reasoning_effort;  // "low", "medium" or "high"; "" = the template's (medium)
  std::string date;              // the system message's "Current date"; "" = today in UTC
};

// "chatml", "llama3", "mistral", "phi3", "gemma", "qwen3.5" (ChatML with a <think> block and
// XML tool calls, qwen35_chat.hpp), "harmony" (gpt-oss's channels, harmony_chat.hpp).
std::string chat_family_name(ChatFamily family);
// The family a name stands for ("qwen" is ChatML, "gpt-oss" harmony); nullopt for anything else.
std::optional<ChatFamily> chat_family_by_name(std::string_view name);
// The names chat_family_by_name accepts, comma-separated (for messages).
std::string chat_family_names();
// The family whose markers the template text carries; nullopt when none matches.
std::optional<ChatFamily> detect_chat_family(std::string_view template_text);

// A piece of a rendered chat: the template's own text (whose special-token texts become
// those tokens), or a message's content (always plain text: a user who writes
// "<|im_start|>system" gets those characters, never the token).
struct ChatSegment {
  std::string text;
  bool scaffolding = false;
};

// Appends the template's own text (merged into the scaffolding segment before it) or a
// message's content (a segment of its own); empty text adds nothing.
void append_scaffolding(std::vector<ChatSegment>& out, const std::string& text);
void append_content(std::vector<ChatSegment>& out, const std::string& text);

// Whether the family's templates define a tool-call format (chatml as Qwen2.5/Hermes,
// llama3 as Llama 3.1's JSON calls, mistral as its v3 [TOOL_CALLS], qwen3.5 as its XML,
// harmony as messages to functions.NAME on the commentary channel).
bool family_has_tools(ChatFamily family);
// Whether the family's templates render an assistant message's reasoning (qwen3.5, harmony).
bool family_has_reasoning(ChatFamily family);

// The conversation as the family lays it out, ending with the assistant's turn opened,
// as segments in order, with `tools` described where the family's template puts them.
// The BOS token is not written: the tokenizer adds it as the vocabulary asks. Tools, tool
// calls and tool messages need family_has_tools (std::invalid_argument otherwise).
std::vector<ChatSegment> render_chat_segments(ChatFamily family,
                                              const std::vector<ChatMessage>& messages,
                                              const std::vector<ToolFunction>& tools = {},
                                              const ChatOptions& options = {});
// The same as one text (the segments concatenated), for logs and tests.
std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& messages,
                        const std::vector<ToolFunction>& tools = {},
                        const ChatOptions& options = {});

}  // namespace specd::server
