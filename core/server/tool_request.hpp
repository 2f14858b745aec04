// The tool fields of a chat request (OpenAI's `tools`, `tool_choice`,
// `parallel_tool_calls`) and the tool parts of its messages, parsed and checked. Every
// problem is a RequestError (400) naming the field.
// Thread rule: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/chat_template.hpp"

namespace specd::server {

struct ToolRequest {
  enum class Choice { automatic, none, required, named };
  std::vector<ToolFunction> tools;
  Choice choice = Choice::automatic;
  std::string named;     // Choice::named: the function to call
  bool parallel = true;  // parallel_tool_calls: more than one call per answer
  // Calls are looked for in the output: tools were given and tool_choice is not "none".
  bool active() const { return !tools.empty() && choice != Choice::none; }
  // The output must be calls (a grammar makes it so).
  bool forced() const {
    return active() && (choice == Choice::required || choice == Choice::named);
  }
};

// At most this many tools per request.
constexpr size_t kMaxTools = 128;

// `tools`, `tool_choice` and `parallel_tool_calls` of a chat body (absent: no tools).
// `ordered_tools`: the body's `tools` with their keys in the client's order (ordered_member,
// json_body.hpp), of which each tool's parameters are kept (a template prints the schema, and
// the model reads the properties, in that order); null: in name order.
ToolRequest parse_tool_request(const nlohmann::json& body,
                               const nlohmann::ordered_json& ordered_tools = nullptr);

// An assistant message's `tool_calls` (`param` names the field): each call's arguments must
// be the JSON text of an object, and come back normalised (compact, keys in their order).
std::vector<ToolCall> parse_message_tool_calls(const std::string& param, const nlohmann::json& v);

}  // namespace specd::server
