// Chat templates: the prompt layout of the common model families, recognised from the
// Jinja text a GGUF carries in tokenizer.chat_template (no Jinja is evaluated). A template
// that matches no family is refused rather than guessed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::server {

enum class ChatFamily { chatml, llama3, mistral, phi3, gemma };

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// "chatml", "llama3", "mistral", "phi3", "gemma".
std::string chat_family_name(ChatFamily family);
// The family a name stands for ("qwen" is ChatML); nullopt for anything else.
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

// The conversation as the family lays it out, ending with the assistant's turn opened,
// as segments in order. The BOS token is not written: the tokenizer adds it as the
// vocabulary asks.
std::vector<ChatSegment> render_chat_segments(ChatFamily family,
                                              const std::vector<ChatMessage>& messages);
// The same as one text (the segments concatenated), for logs and tests.
std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& messages);

}  // namespace specd::server
