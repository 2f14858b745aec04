#include "server/tool_request.hpp"

#include <cctype>
#include <set>

#include "server/json_body.hpp"
#include "server/request.hpp"
#include "server/request_fields.hpp"

namespace specd::server {
namespace {

using nlohmann::json;

// OpenAI's rule for function names: 1 to 64 of a-z, A-Z, 0-9, '_' and '-'.
std::string function_name(const std::string& param, const json& v) {
  const std::string name = string(param, v);
  if (name.empty() || name.size() > 64) bad(param, "must be 1 to 64 characters");
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-')
      bad(param, "may hold only letters, digits, '_' and '-'");
  return name;
}

// JSON text as the request keeps it: compact, invalid UTF-8 replaced.
template <class Json>
std::string compact(const Json& v) {
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// `ordered`'s member `key`, or nullptr.
const nlohmann::ordered_json* member(const nlohmann::ordered_json* ordered, const char* key) {
  if (!ordered || !ordered->is_object()) return nullptr;
  const auto it = ordered->find(key);
  return it == ordered->end() ? nullptr : &*it;
}

// `t`: tools[i]; `ordered`: the same in the client's key order, or nullptr.
ToolFunction tool(const std::string& p, const json& t, const nlohmann::ordered_json* ordered) {
  if (!t.is_object()) bad(p, std::string("must be an object, not ") + kind_of(t));
  check_known(t, {"type", "function"}, p + ".");
  if (!t.contains("type")) bad(p + ".type", "is required");
  if (string(p + ".type", t["type"]) != "function") bad(p + ".type", "must be \"function\"");
  if (!t.contains("function")) bad(p + ".function", "is required");
  const json& f = t["function"];
  const std::string fp = p + ".function";
  if (!f.is_object()) bad(fp, std::string("must be an object, not ") + kind_of(f));
  check_known(f, {"name", "description", "parameters", "strict"}, fp + ".");
  if (!f.contains("name")) bad(fp + ".name", "is required");
  ToolFunction out;
  out.name = function_name(fp + ".name", f["name"]);
  if (f.contains("description") && !f["description"].is_null())
    out.description = string(fp + ".description", f["description"]);
  out.parameters = "{}";
  if (f.contains("parameters") && !f["parameters"].is_null()) {
    if (!f["parameters"].is_object())
      bad(fp + ".parameters",
          std::string("must be a JSON Schema object, not ") + kind_of(f["parameters"]));
    // A call's arguments are an object (OpenAI refuses any other type here too).
    const json& type = f["parameters"].contains("type") ? f["parameters"]["type"] : json();
    if (!type.is_null() && type != "object")
      bad(fp + ".parameters.type",
          "must be \"object\": a call's arguments are a JSON object, not " + type.dump());
    // Kept in the client's key order where the ordered copy is the same schema.
    const nlohmann::ordered_json* kept = member(member(ordered, "function"), "parameters");
    out.parameters =
        kept && json(*kept) == f["parameters"] ? compact(*kept) : compact(f["parameters"]);
  }
  if (f.contains("strict") && !f["strict"].is_null()) boolean(fp + ".strict", f["strict"]);
  return out;
}

}  // namespace

ToolRequest parse_tool_request(const json& body, const nlohmann::ordered_json& ordered_tools) {
  ToolRequest r;
  if (body.contains("tools") && !body["tools"].is_null()) {
    const json& v = body["tools"];
    if (!v.is_array()) bad("tools", std::string("must be an array, not ") + kind_of(v));
    if (v.size() > kMaxTools)
      bad("tools", "holds more than " + std::to_string(kMaxTools) + " tools");
    std::set<std::string> names;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string p = "tools[" + std::to_string(i) + "]";
      const bool same = ordered_tools.is_array() && ordered_tools.size() == v.size();
      r.tools.push_back(tool(p, v[i], same ? &ordered_tools[i] : nullptr));
      if (!names.insert(r.tools.back().name).second)
        bad(p + ".function.name", "repeats the name \"" + r.tools.back().name + "\"");
    }
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const json& c = body["tool_choice"];
    if (c.is_string()) {
      const std::string s = c.get<std::string>();
      if (s == "none")
        r.choice = ToolRequest::Choice::none;
      else if (s == "auto")
        r.choice = ToolRequest::Choice::automatic;
      else if (s == "required")
        r.choice = ToolRequest::Choice::required;
      else
        bad("tool_choice", "must be \"none\", \"auto\", \"required\" or a named function");
    } else if (c.is_object()) {
      check_known(c, {"type", "function"}, "tool_choice.");
      if (!c.contains("type") || string("tool_choice.type", c["type"]) != "function")
        bad("tool_choice.type", "must be \"function\"");
      if (!c.contains("function") || !c["function"].is_object())
        bad("tool_choice.function", "must be an object with the function's name");
      check_known(c["function"], {"name"}, "tool_choice.function.");
      if (!c["function"].contains("name")) bad("tool_choice.function.name", "is required");
      r.named = string("tool_choice.function.name", c["function"]["name"]);
      r.choice = ToolRequest::Choice::named;
      bool found = false;
      for (const ToolFunction& t : r.tools) found = found || t.name == r.named;
      if (!found) bad("tool_choice.function.name", "names no tool of 'tools': \"" + r.named + "\"");
    } else {
      bad("tool_choice", std::string("must be a string or an object, not ") + kind_of(c));
    }
    if (r.tools.empty() && r.choice != ToolRequest::Choice::none &&
        r.choice != ToolRequest::Choice::automatic)
      bad("tool_choice", "needs 'tools'");
  }
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null())
    r.parallel = boolean("parallel_tool_calls", body["parallel_tool_calls"]);
  return r;
}

std::vector<ToolCall> parse_message_tool_calls(const std::string& param, const json& v) {
  if (!v.is_array()) bad(param, std::string("must be an array, not ") + kind_of(v));
  if (v.size() > kMaxTools) bad(param, "holds more than " + std::to_string(kMaxTools) + " calls");
  std::vector<ToolCall> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = param + "[" + std::to_string(i) + "]";
    const json& c = v[i];
    if (!c.is_object()) bad(p, std::string("must be an object, not ") + kind_of(c));
    check_known(c, {"id", "type", "function"}, p + ".");
    ToolCall call;
    if (c.contains("id")) call.id = string(p + ".id", c["id"]);
    if (c.contains("type") && string(p + ".type", c["type"]) != "function")
      bad(p + ".type", "must be \"function\"");
    if (!c.contains("function") || !c["function"].is_object())
      bad(p + ".function", "must be an object with name and arguments");
    const json& f = c["function"];
    check_known(f, {"name", "arguments"}, p + ".function.");
    if (!f.contains("name")) bad(p + ".function.name", "is required");
    call.name = function_name(p + ".function.name", f["name"]);
    call.arguments = "{}";
    if (f.contains("arguments")) {
      const std::string text = string(p + ".function.arguments", f["arguments"]);
      nlohmann::ordered_json args;
      try {
        args = parse_ordered_json_body(text);  // with the body's nesting limit
      } catch (const RequestError& e) {
        bad(p + ".function.arguments",
            std::string("must be the JSON text of an object: ") + e.what());
      }
      if (!args.is_object()) bad(p + ".function.arguments", "must be the JSON text of an object");
      call.arguments = compact(args);
    }
    out.push_back(std::move(call));
  }
  return out;
}

}  // namespace specd::server
