#include "server/chat_template.hpp"

#include <cctype>

namespace specd::server {
namespace {

bool has(std::string_view text, std::string_view marker) {
  return text.find(marker) != std::string_view::npos;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Families without a system role fold the system text into the first user turn.
std::vector<ChatMessage> fold_system(const std::vector<ChatMessage>& messages) {
  std::string system;
  std::vector<ChatMessage> out;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      system += (system.empty() ? "" : "\n\n") + m.content;
      continue;
    }
    ChatMessage copy = m;
    if (copy.role == "user" && !system.empty()) {
      copy.content = system + "\n\n" + copy.content;
      system.clear();
    }
    out.push_back(copy);
  }
  if (!system.empty()) out.insert(out.begin(), ChatMessage{"user", system});
  return out;
}

}  // namespace

std::string chat_family_name(ChatFamily family) {
  switch (family) {
    case ChatFamily::chatml:
      return "chatml";
    case ChatFamily::llama3:
      return "llama3";
    case ChatFamily::mistral:
      return "mistral";
    case ChatFamily::phi3:
      return "phi3";
    case ChatFamily::gemma:
      return "gemma";
  }
  return "?";
}

std::optional<ChatFamily> chat_family_by_name(std::string_view name) {
  if (name == "chatml" || name == "qwen") return ChatFamily::chatml;
  if (name == "llama3") return ChatFamily::llama3;
  if (name == "mistral") return ChatFamily::mistral;
  if (name == "phi3") return ChatFamily::phi3;
  if (name == "gemma") return ChatFamily::gemma;
  return std::nullopt;
}

std::string chat_family_names() {
  return "chatml (qwen), llama3, mistral, phi3, gemma";
}

std::optional<ChatFamily> detect_chat_family(std::string_view t) {
  if (has(t, "<|im_start|>")) return ChatFamily::chatml;
  if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>")) return ChatFamily::llama3;
  if (has(t, "<start_of_turn>")) return ChatFamily::gemma;
  if (has(t, "<|assistant|>") && has(t, "<|end|>")) return ChatFamily::phi3;
  // Llama 2's <<SYS>> block is a different layout: not recognised as Mistral.
  if (has(t, "[INST]") && has(t, "[/INST]") && !has(t, "<<SYS>>")) return ChatFamily::mistral;
  return std::nullopt;
}

std::vector<ChatSegment> render_chat_segments(ChatFamily family,
                                              const std::vector<ChatMessage>& messages) {
  std::vector<ChatSegment> out;
  auto frame = [&](const std::string& text) {
    if (text.empty()) return;
    if (!out.empty() && out.back().scaffolding)
      out.back().text += text;
    else
      out.push_back({text, true});
  };
  auto content = [&](const std::string& text) {
    if (!text.empty()) out.push_back({text, false});
  };
  switch (family) {
    case ChatFamily::chatml:
      for (const ChatMessage& m : messages) {
        frame("<|im_start|>" + m.role + "\n");
        content(m.content);
        frame("<|im_end|>\n");
      }
      frame("<|im_start|>assistant\n");
      break;
    case ChatFamily::llama3:
      for (const ChatMessage& m : messages) {
        frame("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n");
        content(trim(m.content));
        frame("<|eot_id|>");
      }
      frame("<|start_header_id|>assistant<|end_header_id|>\n\n");
      break;
    case ChatFamily::phi3:
      for (const ChatMessage& m : messages) {
        frame("<|" + m.role + "|>\n");
        content(m.content);
        frame("<|end|>\n");
      }
      frame("<|assistant|>\n");
      break;
    case ChatFamily::mistral:
      for (const ChatMessage& m : fold_system(messages)) {
        if (m.role == "user") {
          frame("[INST] ");
          content(trim(m.content));
          frame(" [/INST]");
        } else {
          content(trim(m.content));
          frame("</s>");
        }
      }
      break;
    case ChatFamily::gemma:
      for (const ChatMessage& m : fold_system(messages)) {
        frame("<start_of_turn>" + std::string(m.role == "assistant" ? "model" : "user") + "\n");
        content(trim(m.content));
        frame("<end_of_turn>\n");
      }
      frame("<start_of_turn>model\n");
      break;
  }
  return out;
}

std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const ChatSegment& s : render_chat_segments(family, messages)) out += s.text;
  return out;
}

}  // namespace specd::server
