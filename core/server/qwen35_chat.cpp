#include "server/qwen35_chat.hpp"

#include <cctype>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_writer.hpp"
#include "server/jinja_json.hpp"

namespace specd::server {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool starts_with(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}
bool ends_with(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

constexpr const char* kToolsIntro =
    "# Tools\n\nYou have access to the following functions:\n\n<tools>";
constexpr const char* kToolsRules =
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO "
    "suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>"
    "\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second "
    "parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n"
    "<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner "
    "<function=...></function> block must be nested within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n- You may provide optional reasoning for your "
    "function call in natural language BEFORE the function call, but NOT after\n- If there is "
    "no function call available, answer the question like normal with your current knowledge "
    "and do not tell the user about function calls\n</IMPORTANT>";

// A parameter value as the template prints it: JSON for objects and arrays, a string as is,
// and other scalars as Jinja's `string` filter does.
std::string value_text(const ordered_json& v) {
  if (v.is_object() || v.is_array()) return jinja_tojson(v);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  return v.dump();
}

}  // namespace

std::string qwen35_call_body(const ToolCall& call) {
  std::string out = "<function=" + call.name + ">\n";
  const ordered_json args =
      call.arguments.empty() ? ordered_json::object() : ordered_json::parse(call.arguments);
  for (const auto& [key, value] : args.items())
    out += "<parameter=" + key + ">\n" + value_text(value) + "\n</parameter>\n";
  return out + "</function>";
}

std::vector<ChatSegment> render_qwen35(const std::vector<ChatMessage>& messages,
                                       const std::vector<ToolFunction>& tools) {
  std::vector<ChatSegment> out;
  auto frame = [&](const std::string& text) { append_scaffolding(out, text); };
  auto content = [&](const std::string& text) { append_content(out, text); };
  const bool system_first = !messages.empty() && messages.front().role == "system";
  if (!tools.empty()) {
    frame("<|im_start|>system\n");
    std::string block = kToolsIntro;
    for (const ToolFunction& t : tools)
      block += "\n{\"type\": \"function\", \"function\": {\"name\": " + json_quote(t.name) +
               ", \"description\": " + json_quote(t.description) +
               ", \"parameters\": " + jinja_tojson(ordered_json::parse(t.parameters)) + "}}";
    block += kToolsRules;
    if (system_first && !trim(messages.front().content).empty())
      block += "\n\n" + trim(messages.front().content);
    content(block);
    frame("<|im_end|>\n");
  } else if (system_first) {
    frame("<|im_start|>system\n");
    content(trim(messages.front().content));
    frame("<|im_end|>\n");
  }
  // The last user message that is a query, not tool results passed back as a user turn.
  size_t last_query = messages.size();
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role != "user") continue;
    const std::string c = trim(messages[i].content);
    if (!(starts_with(c, "<tool_response>") && ends_with(c, "</tool_response>"))) {
      last_query = i;
      break;
    }
  }
  if (last_query == messages.size())
    throw std::invalid_argument("the qwen3.5 chat template needs a user query");
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    std::string text = trim(m.content);
    if (m.role == "system") {
      if (i != 0) throw std::invalid_argument("a system message must come first");
    } else if (m.role == "user") {
      frame("<|im_start|>user\n");
      content(text);
      frame("<|im_end|>\n");
    } else if (m.role == "assistant") {
      // The request's reasoning_content where given (the template's message.reasoning_content:
      // the content is then left whole), else a <think> block at the content's start.
      std::string reasoning = trim(m.reasoning);
      const size_t end = m.reasoning.empty() ? text.find("</think>") : std::string::npos;
      if (end != std::string::npos) {
        std::string before = text.substr(0, end);
        while (!before.empty() && before.back() == '\n') before.pop_back();
        if (const size_t open = before.rfind("<think>"); open != std::string::npos)
          before = before.substr(open + 7);
        reasoning = trim(before);
        text = text.substr(text.rfind("</think>") + 8);
        text.erase(0, text.find_first_not_of('\n') == std::string::npos
                          ? text.size()
                          : text.find_first_not_of('\n'));
      }
      frame("<|im_start|>assistant\n");
      if (i > last_query) {
        frame("<think>\n");
        content(reasoning);
        frame("\n</think>\n\n");
      }
      content(text);
      for (size_t c = 0; c < m.tool_calls.size(); ++c) {
        frame(std::string(c > 0 ? "\n" : (trim(text).empty() ? "" : "\n\n")) + "<tool_call>\n");
        content(qwen35_call_body(m.tool_calls[c]));
        frame("\n</tool_call>");
      }
      frame("<|im_end|>\n");
    } else if (m.role == "tool") {
      if (i > 0 && messages[i - 1].role != "tool") frame("<|im_start|>user");
      frame("\n<tool_response>\n");
      content(text);
      frame("\n</tool_response>");
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") frame("<|im_end|>\n");
    } else {
      throw std::invalid_argument("the qwen3.5 chat template has no role '" + m.role + "'");
    }
  }
  frame("<|im_start|>assistant\n<think>\n");
  return out;
}

}  // namespace specd::server
