#include "server/chat_template.hpp"

#include <cctype>
#include <stdexcept>

#include "common/json_writer.hpp"
#include "server/harmony_chat.hpp"
#include "server/qwen35_chat.hpp"

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

// A tool as the templates list it: {"type": "function", "function": {...}}.
std::string tool_json(const ToolFunction& t) {
  return "{\"type\": \"function\", \"function\": {\"name\": " + json_quote(t.name) +
         ", \"description\": " + json_quote(t.description) + ", \"parameters\": " + t.parameters +
         "}}";
}

// A call as the families write it: {"name": ..., "<arguments_key>": {...}}.
std::string call_json(const ToolCall& c, const char* arguments_key) {
  return "{\"name\": " + json_quote(c.name) + ", \"" + arguments_key +
         "\": " + (c.arguments.empty() ? "{}" : c.arguments) + "}";
}

bool uses_tools(const std::vector<ChatMessage>& messages, const std::vector<ToolFunction>& tools) {
  if (!tools.empty()) return true;
  for (const ChatMessage& m : messages)
    if (m.role == "tool" || !m.tool_calls.empty()) return true;
  return false;
}

// Qwen2.5's (Hermes') tool instructions, after the system text.
std::string hermes_tools_block(const std::vector<ToolFunction>& tools) {
  std::string out =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou "
      "are provided with function signatures within <tools></tools> XML tags:\n<tools>";
  for (const ToolFunction& t : tools) {
    out += '\n';
    out += tool_json(t);
  }
  out +=
      "\n</tools>\n\nFor each function call, return a json object with function name and "
      "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
      "<function-name>, \"arguments\": <args-json-object>}\n</tool_call>";
  return out;
}

// Llama 3.1's instructions, put before the first user message's text.
std::string llama3_tools_preamble(const std::vector<ToolFunction>& tools) {
  std::string out =
      "Given the following functions, please respond with a JSON for a function call with its "
      "proper arguments that best answers the given prompt.\n\nRespond in the format "
      "{\"name\": function name, \"parameters\": dictionary of argument name and its "
      "value}.Do not use variables.\n\n";
  for (const ToolFunction& t : tools) out += tool_json(t) + "\n\n";
  return out;
}

}  // namespace

bool family_has_tools(ChatFamily family) {
  return family == ChatFamily::chatml || family == ChatFamily::llama3 ||
         family == ChatFamily::mistral || family == ChatFamily::qwen35 ||
         family == ChatFamily::harmony;
}

bool family_has_reasoning(ChatFamily family) {
  return family == ChatFamily::qwen35 || family == ChatFamily::harmony;
}

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
    case ChatFamily::qwen35:
      return "qwen3.5";
    case ChatFamily::harmony:
      return "harmony";
  }
  return "?";
}

std::optional<ChatFamily> chat_family_by_name(std::string_view name) {
  if (name == "chatml" || name == "qwen") return ChatFamily::chatml;
  if (name == "llama3") return ChatFamily::llama3;
  if (name == "mistral") return ChatFamily::mistral;
  if (name == "phi3") return ChatFamily::phi3;
  if (name == "gemma") return ChatFamily::gemma;
  if (name == "qwen3.5") return ChatFamily::qwen35;
  if (name == "harmony" || name == "gpt-oss") return ChatFamily::harmony;
  return std::nullopt;
}

std::string chat_family_names() {
  return "chatml (qwen), llama3, mistral, phi3, gemma, qwen3.5, harmony (gpt-oss)";
}

std::optional<ChatFamily> detect_chat_family(std::string_view t) {
  // gpt-oss (OpenAI's harmony): every message is <|start|>ROLE<|channel|>...<|message|>.
  if (has(t, "<|start|>") && has(t, "<|channel|>") && has(t, "<|message|>"))
    return ChatFamily::harmony;
  // Qwen3.5: ChatML whose tool calls are XML (<function=...>) and whose turns think.
  if (has(t, "<|im_start|>") && has(t, "<function=") && has(t, "<think>"))
    return ChatFamily::qwen35;
  if (has(t, "<|im_start|>")) return ChatFamily::chatml;
  if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>")) return ChatFamily::llama3;
  if (has(t, "<start_of_turn>")) return ChatFamily::gemma;
  if (has(t, "<|assistant|>") && has(t, "<|end|>")) return ChatFamily::phi3;
  // Llama 2's <<SYS>> block is a different layout: not recognised as Mistral.
  if (has(t, "[INST]") && has(t, "[/INST]") && !has(t, "<<SYS>>")) return ChatFamily::mistral;
  return std::nullopt;
}

void append_scaffolding(std::vector<ChatSegment>& out, const std::string& text) {
  if (text.empty()) return;
  if (!out.empty() && out.back().scaffolding)
    out.back().text += text;
  else
    out.push_back({text, true});
}

void append_content(std::vector<ChatSegment>& out, const std::string& text) {
  if (!text.empty()) out.push_back({text, false});
}

std::vector<ChatSegment> render_chat_segments(ChatFamily family,
                                              const std::vector<ChatMessage>& messages,
                                              const std::vector<ToolFunction>& tools,
                                              const ChatOptions& options) {
  if (!family_has_tools(family) && uses_tools(messages, tools))
    throw std::invalid_argument("the " + chat_family_name(family) +
                                " chat template defines no tool-call format");
  std::vector<ChatSegment> out;
  auto frame = [&](const std::string& text) { append_scaffolding(out, text); };
  auto content = [&](const std::string& text) { append_content(out, text); };
  switch (family) {
    case ChatFamily::qwen35:
      return render_qwen35(messages, tools);
    case ChatFamily::harmony:
      return render_harmony(messages, tools, options);
    case ChatFamily::chatml:
      for (size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (i == 0 && !tools.empty()) {  // the tools go into the system turn
          frame("<|im_start|>system\n");
          if (m.role == "system") content(m.content + "\n\n");
          content(hermes_tools_block(tools));
          frame("<|im_end|>\n");
          if (m.role == "system") continue;
        }
        if (m.role == "tool") {  // consecutive results share one user turn
          if (i == 0 || messages[i - 1].role != "tool") frame("<|im_start|>user");
          frame("\n<tool_response>\n");
          content(m.content);
          frame("\n</tool_response>");
          if (i + 1 == messages.size() || messages[i + 1].role != "tool") frame("<|im_end|>\n");
          continue;
        }
        frame("<|im_start|>" + m.role + "\n");
        content(m.content);
        for (size_t c = 0; c < m.tool_calls.size(); ++c) {
          frame(c > 0 || !m.content.empty() ? "\n<tool_call>\n" : "<tool_call>\n");
          content(call_json(m.tool_calls[c], "arguments"));
          frame("\n</tool_call>");
        }
        frame("<|im_end|>\n");
      }
      frame("<|im_start|>assistant\n");
      break;
    case ChatFamily::llama3: {
      bool preamble = !tools.empty();  // still to put before the first user text
      if (!tools.empty() && (messages.empty() || messages.front().role != "system")) {
        frame("<|start_header_id|>system<|end_header_id|>\n\n");
        content("Environment: ipython");
        frame("<|eot_id|>");
      }
      for (const ChatMessage& m : messages) {
        const std::string role = m.role == "tool" ? "ipython" : m.role;
        frame("<|start_header_id|>" + role + "<|end_header_id|>\n\n");
        std::string text = trim(m.content);
        if (m.role == "system" && !tools.empty()) text = "Environment: ipython\n\n" + text;
        if (m.role == "user" && preamble) {
          text = llama3_tools_preamble(tools) + text;
          preamble = false;
        }
        for (size_t c = 0; c < m.tool_calls.size(); ++c) {
          if (!text.empty()) text += '\n';
          text += call_json(m.tool_calls[c], "parameters");
        }
        content(text);
        frame("<|eot_id|>");
      }
      frame("<|start_header_id|>assistant<|end_header_id|>\n\n");
      break;
    }
    case ChatFamily::phi3:
      for (const ChatMessage& m : messages) {
        frame("<|" + m.role + "|>\n");
        content(m.content);
        frame("<|end|>\n");
      }
      frame("<|assistant|>\n");
      break;
    case ChatFamily::mistral: {
      const std::vector<ChatMessage> folded = fold_system(messages);
      size_t last_user = folded.size();
      for (size_t i = 0; i < folded.size(); ++i)
        if (folded[i].role == "user") last_user = i;
      for (size_t i = 0; i < folded.size(); ++i) {
        const ChatMessage& m = folded[i];
        if (m.role == "user") {
          if (i == last_user && !tools.empty()) {  // v3 lists the tools before the last turn
            std::string list = "[";
            for (size_t t = 0; t < tools.size(); ++t) list += (t ? ", " : "") + tool_json(tools[t]);
            frame("[AVAILABLE_TOOLS] ");
            content(list + "]");
            frame("[/AVAILABLE_TOOLS]");
          }
          frame("[INST] ");
          content(trim(m.content));
          frame(" [/INST]");
        } else if (m.role == "tool") {
          frame("[TOOL_RESULTS] ");
          content("{\"content\": " + json_quote(m.content) +
                  ", \"call_id\": " + json_quote(m.tool_call_id) + "}");
          frame("[/TOOL_RESULTS]");
        } else if (!m.tool_calls.empty()) {
          std::string list = "[";
          for (size_t c = 0; c < m.tool_calls.size(); ++c) {
            std::string call = call_json(m.tool_calls[c], "arguments");
            call.pop_back();  // the id goes inside the object
            list += (c ? ", " : "") + call + ", \"id\": " + json_quote(m.tool_calls[c].id) + "}";
          }
          frame("[TOOL_CALLS] ");
          content(list + "]");
          frame("</s>");
        } else {
          content(trim(m.content));
          frame("</s>");
        }
      }
      break;
    }
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

std::string render_chat(ChatFamily family, const std::vector<ChatMessage>& messages,
                        const std::vector<ToolFunction>& tools, const ChatOptions& options) {
  std::string out;
  for (const ChatSegment& s : render_chat_segments(family, messages, tools, options)) out += s.text;
  return out;
}

}  // namespace specd::server
