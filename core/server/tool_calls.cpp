#include "server/tool_calls.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "grammar/gbnf_grammar.hpp"
#include "grammar/json_schema_grammar.hpp"
#include "server/harmony_output.hpp"
#include "server/json_body.hpp"
#include "server/request.hpp"

namespace specd::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralTag = "[TOOL_CALLS]";

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string dump(const ordered_json& j) {
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

// The model's JSON, keys in the order it wrote them (they go back to the client so).
std::optional<ordered_json> parse(std::string_view text) {
  try {
    return parse_ordered_json_body(text);  // with the request body's nesting limit
  } catch (const RequestError&) {
    return std::nullopt;
  }
}

// A call object {"name": <a tool>, <arguments_key>: {...}} (arguments may also be the JSON
// text of an object, as some models write them).
std::optional<ToolCall> call_of(const ordered_json& j, const std::vector<ToolFunction>& tools) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  ToolCall call;
  call.name = j["name"].get<std::string>();
  bool known = false;
  for (const ToolFunction& t : tools) known = known || t.name == call.name;
  if (!known) return std::nullopt;
  const char* key = j.contains("arguments") ? "arguments" : "parameters";
  ordered_json args = j.contains(key) ? j[key] : ordered_json::object();
  if (args.is_string()) {
    std::optional<ordered_json> inner = parse(args.get<std::string>());
    if (!inner) return std::nullopt;
    args = *inner;
  }
  if (!args.is_object()) return std::nullopt;
  call.arguments = dump(args);
  return call;
}

// Calls in <tool_call>...</tool_call> blocks, each body read by `call_in` (nullopt: the
// output is not calls); the text around them is the content.
template <class CallIn>
std::optional<ParsedToolCalls> parse_tool_call_blocks(std::string_view text, CallIn call_in) {
  ParsedToolCalls out;
  std::string content;
  size_t at = 0;
  while (true) {
    const size_t open = text.find(kHermesOpen, at);
    if (open == std::string_view::npos) break;
    const size_t start = open + kHermesOpen.size();
    const size_t close = text.find(kHermesClose, start);
    if (close == std::string_view::npos) return std::nullopt;  // cut off: not a call
    std::optional<ToolCall> call = call_in(text.substr(start, close - start));
    if (!call) return std::nullopt;
    out.calls.push_back(std::move(*call));
    content += text.substr(at, open - at);
    at = close + kHermesClose.size();
  }
  if (out.calls.empty()) return std::nullopt;
  content += text.substr(at);
  out.content = std::string(trim(content));
  return out;
}

std::optional<ParsedToolCalls> parse_hermes(std::string_view text,
                                            const std::vector<ToolFunction>& tools) {
  return parse_tool_call_blocks(text, [&](std::string_view body) -> std::optional<ToolCall> {
    const std::optional<ordered_json> j = parse(trim(body));
    if (!j) return std::nullopt;
    return call_of(*j, tools);
  });
}

// Qwen3.5's XML calls: <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...
// </function>\n</tool_call>. A value is a string where the tool's schema says so, else JSON
// where it parses as JSON, else a string.
std::optional<ToolCall> xml_call_of(std::string_view body, const std::vector<ToolFunction>& tools) {
  constexpr std::string_view kFunction = "<function=", kFunctionEnd = "</function>";
  constexpr std::string_view kParam = "<parameter=", kParamEnd = "</parameter>";
  body = trim(body);
  if (body.substr(0, kFunction.size()) != kFunction || body.size() < kFunctionEnd.size() ||
      body.substr(body.size() - kFunctionEnd.size()) != kFunctionEnd)
    return std::nullopt;
  const size_t name_end = body.find('>');
  ToolCall call;
  call.name = std::string(body.substr(kFunction.size(), name_end - kFunction.size()));
  const ToolFunction* tool = nullptr;
  for (const ToolFunction& t : tools)
    if (t.name == call.name) tool = &t;
  if (!tool) return std::nullopt;
  const json schema = json::parse(tool->parameters, nullptr, false);
  const json* props =
      schema.is_object() && schema.contains("properties") && schema["properties"].is_object()
          ? &schema["properties"]
          : nullptr;
  ordered_json args = ordered_json::object();
  std::string_view rest =
      body.substr(name_end + 1, body.size() - kFunctionEnd.size() - name_end - 1);
  while (!(rest = trim(rest)).empty()) {
    if (rest.substr(0, kParam.size()) != kParam) return std::nullopt;
    const size_t key_end = rest.find('>');
    const size_t end = rest.find(kParamEnd);
    if (key_end == std::string_view::npos || end == std::string_view::npos || end < key_end)
      return std::nullopt;
    const std::string key(rest.substr(kParam.size(), key_end - kParam.size()));
    std::string_view value = rest.substr(key_end + 1, end - key_end - 1);
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    const bool text = props && props->contains(key) && (*props)[key].is_object() &&
                      (*props)[key].value("type", json()) == "string";
    std::optional<ordered_json> parsed = text ? std::nullopt : parse(value);
    args[key] = parsed ? std::move(*parsed) : ordered_json(std::string(value));
    rest = rest.substr(end + kParamEnd.size());
  }
  call.arguments = dump(args);
  return call;
}

std::optional<ParsedToolCalls> parse_qwen35(std::string_view text,
                                            const std::vector<ToolFunction>& tools) {
  return parse_tool_call_blocks(text,
                                [&](std::string_view body) { return xml_call_of(body, tools); });
}

// GBNF of one XML call to `tool` (rule `rule`): its schema's properties in their order (the
// order the prompt shows them in), the required ones always and the others optionally; a
// string value is text without "</", any other value the JSON its schema allows.
std::string xml_call_rule(const ToolFunction& tool, const std::string& rule,
                          const std::string& where, std::string& rules) {
  const ordered_json schema = ordered_json::parse(tool.parameters);
  std::string body = gbnf_literal("<function=" + tool.name + ">\n");
  if (schema.is_object() && schema.contains("properties") && schema["properties"].is_object()) {
    std::vector<std::string> required;
    if (schema.contains("required") && schema["required"].is_array())
      for (const ordered_json& r : schema["required"])
        if (r.is_string()) required.push_back(r.get<std::string>());
    size_t n = 0;
    for (const auto& [key, property] : schema["properties"].items()) {
      const std::string value =
          property.is_object() && property.value("type", ordered_json()) == "string"
              ? "xml-text"
              : json_schema_expression(json(property), where + ".properties." + key,
                                       rule + "p" + std::to_string(n++) + "-", rules);
      const std::string part = gbnf_literal("<parameter=" + key + ">\n") + " " + value + " " +
                               gbnf_literal("\n</parameter>\n");
      const bool needed = std::find(required.begin(), required.end(), key) != required.end();
      body += " " + (needed ? part : "( " + part + " )?");
    }
  }
  return rule + " ::= " + body + " " + gbnf_literal("</function>") + "\n";
}

std::optional<ParsedToolCalls> parse_whole(std::string_view text, std::string_view tag, bool list,
                                           const std::vector<ToolFunction>& tools) {
  text = trim(text);
  if (text.substr(0, tag.size()) == tag) text = trim(text.substr(tag.size()));
  if (text.empty() || text.front() != (list ? '[' : '{')) return std::nullopt;
  const std::optional<ordered_json> j = parse(text);
  if (!j) return std::nullopt;
  ParsedToolCalls out;
  for (const ordered_json& item : list ? *j : ordered_json::array({*j})) {
    std::optional<ToolCall> call = call_of(item, tools);
    if (!call) return std::nullopt;
    out.calls.push_back(std::move(*call));
  }
  if (out.calls.empty()) return std::nullopt;
  return out;
}

}  // namespace

// "call_" and nine base-62 characters from an FNV-1a hash of the seed and the index.
std::string tool_call_id(const std::string& seed, size_t index) {
  uint64_t h = 1469598103934665603ull;
  for (char c : seed + "#" + std::to_string(index)) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  static const char* digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string out = "call_";
  for (int i = 0; i < 9; ++i, h /= 62) out += digits[h % 62];
  return out;
}

std::optional<ParsedToolCalls> parse_tool_calls(ChatFamily family, std::string_view text,
                                                const std::vector<ToolFunction>& tools,
                                                const std::string& id_seed) {
  if (family == ChatFamily::harmony) {  // ids made as it reads
    ParsedToolCalls out = parse_harmony(text, tools, id_seed);
    if (out.calls.empty()) return std::nullopt;
    return out;
  }
  std::optional<ParsedToolCalls> out;
  if (family == ChatFamily::chatml)
    out = parse_hermes(text, tools);
  else if (family == ChatFamily::qwen35)
    out = parse_qwen35(text, tools);
  else if (family == ChatFamily::llama3)
    out = parse_whole(text, kPythonTag, false, tools);
  else if (family == ChatFamily::mistral)
    out = parse_whole(text, kMistralTag, true, tools);
  if (out)
    for (size_t i = 0; i < out->calls.size(); ++i) out->calls[i].id = tool_call_id(id_seed, i);
  return out;
}

ParsedToolCalls forced_tool_calls(ChatFamily family, std::string_view text,
                                  const std::vector<ToolFunction>& tools,
                                  const std::string& id_seed, const std::string& opened_call) {
  if (family == ChatFamily::harmony) {
    // The output is the opened call's arguments, read as the answer's reader reads them.
    if (opened_call.empty())
      throw std::invalid_argument(
          "a forced harmony output is the arguments of the call its prompt opened: name it");
    ParsedToolCalls out = parse_harmony(text, tools, id_seed, opened_call);
    out.content.clear();
    out.reasoning.clear();
    return out;
  }
  std::optional<ParsedToolCalls> out = parse_tool_calls(family, text, tools, id_seed);
  if (!out && (family == ChatFamily::chatml || family == ChatFamily::qwen35)) {
    // Cut inside a call: the calls before it are whole (the grammar made them). The cut
    // call's start is the last marker that leaves whole calls before it (a marker may also
    // stand inside an argument's string); a few tries, as a hostile output may hold many.
    size_t at = text.size();
    for (int tries = 0; tries < 16 && !out && at > 0; ++tries) {
      at = text.rfind(kHermesOpen, at - 1);
      if (at == std::string_view::npos || at == 0) break;
      out = parse_tool_calls(family, text.substr(0, at), tools, id_seed);
    }
  }
  if (!out) return {};
  out->content.clear();
  out->reasoning.clear();
  return std::move(*out);
}

namespace {

// The rules of the tools a request lets the model call (every tool, or the named one, or
// `only` where given): tool i's rule is named f<i> and its text is
// rule_text(tool, "i", where, "f<i>", rules), which may add helper rules to rules first; the
// names' alternation goes to alternatives. A schema a grammar cannot express is the client's
// 400, at the tool's parameters.
template <class RuleText>
void offered_tool_rules(const ToolRequest& request, RuleText rule_text, std::string& rules,
                        std::string& alternatives, const std::string& only = "") {
  const std::string& name =
      !only.empty() || request.choice != ToolRequest::Choice::named ? only : request.named;
  for (size_t i = 0; i < request.tools.size(); ++i) {
    const ToolFunction& tool = request.tools[i];
    if (!name.empty() && tool.name != name) continue;
    const std::string index = std::to_string(i);
    const std::string where = "tools[" + index + "].function.parameters";
    const std::string rule = std::string("f").append(index);
    try {
      const std::string text = rule_text(tool, index, where, rule, rules);
      rules += text;
    } catch (const GrammarError& e) {
      throw RequestError(400, where,
                         std::string("tool_choice forces a call with a grammar, and ") + e.what());
    }
    alternatives += (alternatives.empty() ? "" : " | ") + rule;
  }
}

}  // namespace

std::string harmony_forced_function(const ToolRequest& request) {
  if (request.choice == ToolRequest::Choice::named) return request.named;
  if (request.tools.size() == 1) return request.tools.front().name;
  throw RequestError(
      400, "tool_choice",
      "tool_choice \"required\" with " + std::to_string(request.tools.size()) +
          " tools cannot be forced in the harmony (gpt-oss) chat format: a call there starts "
          "with control tokens that a grammar cannot produce, so the server opens the call in "
          "the prompt, which needs the one function it calls; name it (tool_choice {\"type\": "
          "\"function\", \"function\": {\"name\": ...}}), offer only that tool, or use "
          "\"auto\"",
      "unsupported_tool_choice");
}

std::string tool_call_grammar(ChatFamily family, const ToolRequest& request,
                              std::string* opened_call) {
  if (family == ChatFamily::harmony) {
    // The arguments of the one call the prompt opens: the forced function's rule is the root.
    const std::string name = harmony_forced_function(request);
    std::string rules, alternatives;
    offered_tool_rules(
        request,
        [](const ToolFunction& tool, const std::string& index, const std::string& where,
           const std::string& rule, std::string& helpers) {
          json schema = json::parse(tool.parameters);
          if (!schema.contains("type")) schema["type"] = "object";  // arguments are an object
          return rule + " ::= " +
                 json_schema_expression(schema, where, std::string("t").append(index).append("-"),
                                        helpers) +
                 "\n";
        },
        rules, alternatives, name);
    if (alternatives.empty())
      throw RequestError(400, "tool_choice", "names no tool of 'tools': \"" + name + "\"");
    std::string text = "root ::= " + alternatives + "\n" + rules + json_value_gbnf_rules();
    parse_gbnf(text);
    if (opened_call) *opened_call = name;
    return text;
  }
  const bool many = request.parallel && request.choice == ToolRequest::Choice::required &&
                    family != ChatFamily::llama3;
  if (family == ChatFamily::qwen35) {
    std::string rules, alternatives;
    offered_tool_rules(
        request,
        [](const ToolFunction& tool, const std::string&, const std::string& where,
           const std::string& rule,
           std::string& helpers) { return xml_call_rule(tool, rule, where, helpers); },
        rules, alternatives);
    std::string text = "root ::= call" + std::string(many ? " ( \"\\n\" call )*" : "") +
                       "\ncall ::= " + gbnf_literal("<tool_call>\n") + " ( " + alternatives +
                       " ) " + gbnf_literal("\n</tool_call>") +
                       "\nxml-text ::= ( [^<] | \"<\" [^/] )*\n" + rules + json_value_gbnf_rules();
    parse_gbnf(text);
    return text;
  }
  const char* key = family == ChatFamily::llama3 ? "parameters" : "arguments";
  std::string rules, alternatives;
  offered_tool_rules(
      request,
      [key](const ToolFunction& tool, const std::string& index, const std::string& where,
            const std::string& rule, std::string& helpers) {
        const std::string arguments =
            json_schema_expression(json::parse(tool.parameters), where,
                                   std::string("t").append(index).append("-"), helpers);
        return rule + " ::= " + gbnf_literal("\"" + tool.name + "\", \"" + key + "\": ") + " " +
               arguments + "\n";
      },
      rules, alternatives);
  const std::string object = gbnf_literal("{\"name\": ") + " ( " + alternatives + " ) \"}\"";
  std::string top;
  if (family == ChatFamily::chatml) {
    top = "root ::= call" + std::string(many ? " ( \"\\n\" call )*" : "") +
          "\ncall ::= " + gbnf_literal("<tool_call>\n") + " " + object + " " +
          gbnf_literal("\n</tool_call>") + "\n";
  } else if (family == ChatFamily::mistral) {
    top = "root ::= \"[\" call" + std::string(many ? " ( \", \" call )*" : "") +
          " \"]\"\ncall ::= " + object + "\n";
  } else {
    top = "root ::= " + object + "\n";
  }
  std::string text = top + rules + json_value_gbnf_rules();
  parse_gbnf(text);  // a bug here must not reach a request as a bad grammar
  return text;
}

std::string ToolCallStream::feed(const std::string& piece) {
  if (!active_ || streaming_ || family_ == ChatFamily::harmony) return piece;
  held_ += piece;
  if (holding_) return "";
  if (family_ == ChatFamily::chatml || family_ == ChatFamily::qwen35) {
    const size_t at = held_.find(kHermesOpen);
    size_t keep;  // held back: the marker and what follows, or what may begin it
    if (at != std::string::npos) {
      holding_ = true;
      keep = held_.size() - at;
    } else {
      keep = 0;
      for (size_t n = std::min(held_.size(), kHermesOpen.size() - 1); n > 0 && keep == 0; --n)
        if (std::string_view(held_).substr(held_.size() - n) == kHermesOpen.substr(0, n)) keep = n;
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }
  // llama3, mistral: a call is the whole answer, so its first characters decide.
  const std::string_view rest = trim(held_);
  if (rest.empty()) return "";
  const std::string_view tag = family_ == ChatFamily::llama3 ? kPythonTag : kMistralTag;
  const char open = family_ == ChatFamily::llama3 ? '{' : '[';
  if (rest.front() == open || rest.substr(0, tag.size()) == tag) {
    holding_ = true;
    return "";
  }
  if (tag.substr(0, rest.size()) == rest) return "";  // may still become the tag
  streaming_ = true;
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace specd::server
