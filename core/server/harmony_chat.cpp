#include "server/harmony_chat.hpp"

#include <ctime>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "server/harmony_tools.hpp"
#include "server/jinja_json.hpp"

namespace specd::server {
namespace {

constexpr const char* kIdentity = "You are ChatGPT, a large language model trained by OpenAI.";
constexpr const char* kKnowledgeCutoff = "2024-06";
constexpr const char* kDefaultEffort = "medium";

bool contains(const std::string& text, const char* s) {
  return text.find(s) != std::string::npos;
}

// The template refuses an assistant's text that holds channel markers: the analysis belongs
// in the reasoning, the answer in the content.
void check_no_channels(const std::string& text, const char* field) {
  if (contains(text, "<|channel|>analysis<|message|>") ||
      contains(text, "<|channel|>final<|message|>"))
    throw std::invalid_argument(
        std::string("an assistant message's ") + field +
        " holds harmony channel tags: pass the analysis (the text between '<|message|>' and "
        "'<|end|>') as reasoning_content and the final answer as content");
}

std::string system_text(const ChatOptions& options, bool tools) {
  const std::string effort =
      options.reasoning_effort.empty() ? kDefaultEffort : options.reasoning_effort;
  if (effort != "low" && effort != "medium" && effort != "high")
    throw std::invalid_argument("reasoning effort must be low, medium or high, not '" + effort +
                                "'");
  std::string out =
      std::string(kIdentity) + "\nKnowledge cutoff: " + kKnowledgeCutoff +
      "\nCurrent date: " + (options.date.empty() ? harmony_utc_date() : options.date) +
      "\n\nReasoning: " + effort +
      "\n\n# Valid channels: analysis, commentary, final. Channel must be "
      "included for every message.";
  if (tools) out += "\nCalls to these tools must go to the commentary channel: 'functions'.";
  return out;
}

// A call's arguments as the template's `tojson` prints the object.
std::string arguments_text(const ToolCall& call) {
  if (call.arguments.empty()) return "{}";
  return jinja_tojson(nlohmann::ordered_json::parse(call.arguments));
}

}  // namespace

std::string harmony_utc_date() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &utc);
  return text;
}

std::string harmony_call_opening(const std::string& name) {
  return "<|channel|>commentary to=functions." + name + " <|constrain|>json<|message|>";
}

std::vector<ChatSegment> render_harmony(const std::vector<ChatMessage>& messages,
                                        const std::vector<ToolFunction>& tools,
                                        const ChatOptions& options) {
  std::vector<ChatSegment> out;
  auto frame = [&](const std::string& text) { append_scaffolding(out, text); };
  auto content = [&](const std::string& text) { append_content(out, text); };

  frame("<|start|>system<|message|>" + system_text(options, !tools.empty()) + "<|end|>");

  // The first message, when it is the system's (or the developer's: the request reads both
  // as "system"), becomes the developer message's instructions.
  const bool instructions = !messages.empty() && messages.front().role == "system";
  const std::string developer = instructions ? messages.front().content : "";
  if (!developer.empty() || !tools.empty()) {
    frame("<|start|>developer<|message|>");
    if (!developer.empty()) {
      frame("# Instructions\n\n");
      content(developer);
      frame("\n\n");
    }
    if (!tools.empty()) {
      frame("# Tools\n\n");
      content(harmony_functions_namespace(tools));  // names and descriptions are the client's
    }
    frame("<|end|>");
  }

  // The last answer (an assistant message without calls): the analysis before a call is kept
  // only after it, while the model is still working on the next answer.
  size_t last_answer = 0;
  for (size_t i = messages.size(); i-- > 0;)
    if (messages[i].role == "assistant" && messages[i].tool_calls.empty()) {
      last_answer = i + 1;
      break;
    }
  std::map<std::string, std::string> called;  // call id -> function name
  std::string last_call;  // the function of the latest call since the latest answer
  for (size_t i = instructions ? 1 : 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system") {
      throw std::invalid_argument(
          "the harmony (gpt-oss) chat template reads only a first system message; a later one "
          "would be dropped");
    } else if (m.role == "user") {
      frame("<|start|>user<|message|>");
      content(m.content);
      frame("<|end|>");
    } else if (m.role == "assistant") {
      check_no_channels(m.content, "content");
      check_no_channels(m.reasoning, "reasoning_content");
      if (m.tool_calls.empty()) {
        // An earlier answer: its reasoning is dropped, as the template drops it.
        frame("<|start|>assistant<|channel|>final<|message|>");
        content(m.content);
        frame("<|end|>");
        last_call.clear();
        continue;
      }
      // The analysis before a call is kept while no later answer follows. With content and
      // reasoning both (as harmony_output.hpp reads an analysis, a preamble and a call), the
      // content is the preamble: a commentary message, kept as the answers' text is.
      const bool both = !m.content.empty() && !m.reasoning.empty();
      const std::string& analysis = m.reasoning.empty() ? m.content : m.reasoning;
      if (i >= last_answer && !analysis.empty()) {
        frame("<|start|>assistant<|channel|>analysis<|message|>");
        content(analysis);
        frame("<|end|>");
      }
      if (both) {
        frame("<|start|>assistant<|channel|>commentary<|message|>");
        content(m.content);
        frame("<|end|>");
      }
      for (const ToolCall& call : m.tool_calls) {
        frame("<|start|>assistant to=functions." + call.name +
              "<|channel|>commentary json<|message|>");
        content(arguments_text(call));
        frame("<|call|>");
        if (!call.id.empty()) called[call.id] = call.name;  // no id names no call
        last_call = call.name;
      }
    } else if (m.role == "tool") {
      if (last_call.empty())
        throw std::invalid_argument(
            "a tool message must follow an assistant message with a tool call");
      const auto it = called.find(m.tool_call_id);
      const std::string& name = it != called.end() ? it->second : last_call;
      frame("<|start|>functions." + name + " to=assistant<|channel|>commentary<|message|>");
      content(m.content);
      frame("<|end|>");
    } else {
      throw std::invalid_argument("the harmony chat template has no role '" + m.role + "'");
    }
  }
  frame("<|start|>assistant");
  return out;
}

}  // namespace specd::server
