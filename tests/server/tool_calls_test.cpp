// Tools in chat requests: the fields are checked, each template family lays tools, calls and
// results out as its template does, calls are found in outputs (and only well-formed ones),
// the forcing grammar accepts exactly calls to the request's tools, and a stream holds back
// only what may be a call.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/gbnf_grammar.hpp"
#include "grammar/grammar_matcher.hpp"
#include "server/request.hpp"
#include "server/responses.hpp"
#include "server/tool_calls.hpp"

using namespace specd::server;
using nlohmann::json;

namespace {

const char* kWeather =
    R"({"type":"function","function":{"name":"get_weather","description":"Weather in a city",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string"},)"
    R"("days":{"type":"integer"}},"required":["city"]}}})";
const char* kTime =
    R"({"type":"function","function":{"name":"get_time","parameters":{"type":"object",)"
    R"("properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"]}}})";

CompletionRequest chat_request(const std::string& extra) {
  return parse_completion_request(
      R"({"messages":[{"role":"user","content":"Weather in Oslo?"}],"tools":[)" +
          std::string(kWeather) + "," + kTime + "]" + extra + "}",
      true, specd::SamplingConfig{});
}

std::string refused(const std::string& body) {
  try {
    parse_completion_request(body, true, specd::SamplingConfig{});
  } catch (const RequestError& e) {
    return e.param;
  }
  return "(accepted)";
}

bool matches(const std::string& gbnf, const std::string& text) {
  const specd::Grammar g = specd::parse_gbnf(gbnf);
  specd::GrammarMatcher m(g);
  specd::GrammarState s = m.initial();
  return m.advance(s, text) && specd::GrammarMatcher::can_end(s);
}

// A stream fed one byte at a time: what went out, and what was held.
std::pair<std::string, std::string> stream(ChatFamily family, const std::string& text) {
  ToolCallStream s(family, true);
  std::string out;
  for (char c : text) out += s.feed(std::string(1, c));
  return {out, s.held()};
}

}  // namespace

TEST_CASE("tools, tool_choice and tool messages are parsed and checked") {
  CompletionRequest r = chat_request(R"(,"tool_choice":"required","parallel_tool_calls":false)");
  REQUIRE(r.tools.tools.size() == 2);
  CHECK(r.tools.tools[0].name == "get_weather");
  CHECK(r.tools.tools[0].description == "Weather in a city");
  CHECK(json::parse(r.tools.tools[0].parameters)["required"][0] == "city");
  CHECK(r.tools.tools[1].description.empty());
  CHECK(r.tools.forced());
  CHECK_FALSE(r.tools.parallel);
  r = chat_request(R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}})");
  CHECK(r.tools.choice == ToolRequest::Choice::named);
  CHECK(r.tools.named == "get_time");
  CHECK_FALSE(chat_request(R"(,"tool_choice":"none")").tools.active());
  CHECK(chat_request("").tools.active());
  CHECK_FALSE(chat_request("").tools.forced());

  const std::string history =
      R"({"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":null,)"
      R"("tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather",)"
      R"("arguments":"{\"city\": \"Oslo\"}"}}]},{"role":"tool","tool_call_id":"call_1",)"
      R"("content":"-3 C"}]})";
  r = parse_completion_request(history, true, specd::SamplingConfig{});
  REQUIRE(r.messages.size() == 3);
  REQUIRE(r.messages[1].tool_calls.size() == 1);
  CHECK(r.messages[1].tool_calls[0].arguments == R"({"city":"Oslo"})");
  CHECK(r.messages[1].content.empty());
  CHECK(r.messages[2].tool_call_id == "call_1");

  const std::string user = R"({"messages":[{"role":"user","content":"x"}])";
  CHECK(refused(user + R"(,"tools":{}})") == "tools");
  CHECK(refused(user + R"(,"tools":[{"type":"function","function":{"name":"a b"}}]})") ==
        "tools[0].function.name");
  CHECK(refused(user + R"(,"tools":[{"type":"retrieval"}]})") == "tools[0].type");
  CHECK(refused(user + R"(,"tools":[)" + kTime + "," + kTime + "]}") == "tools[1].function.name");
  CHECK(
      refused(user + R"(,"tools":[{"type":"function","function":{"name":"f","parameters":3}}]})") ==
      "tools[0].function.parameters");
  // Arguments are an object: a string schema would make a forced call plain text.
  CHECK(refused(user + R"(,"tools":[{"type":"function","function":{"name":"f",)"
                       R"("parameters":{"type":"string"}}}]})") ==
        "tools[0].function.parameters.type");
  CHECK(refused(user + R"(,"tool_choice":"required"})") == "tool_choice");
  CHECK(refused(user + R"(,"tool_choice":"sometimes","tools":[)" + kTime + "]}") == "tool_choice");
  CHECK(refused(user + R"(,"tools":[)" + kTime +
                R"(],"tool_choice":{"type":"function","function":{"name":"nope"}}})") ==
        "tool_choice.function.name");
  CHECK(refused(user + R"(,"tools":[)" + kTime +
                R"(],"tool_choice":"required","response_format":{"type":"json_object"}})") ==
        "tool_choice");
  CHECK(refused(R"({"messages":[{"role":"tool","content":"x"}]})") == "messages[0].tool_call_id");
  CHECK(refused(R"({"messages":[{"role":"user","content":"x","tool_call_id":"c"}]})") ==
        "messages[0].tool_call_id");
  // A result must answer a call made before it.
  const std::string called =
      R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,)"
      R"("tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},)";
  CHECK(refused(called + R"({"role":"tool","tool_call_id":"c1","content":"1"}]})") == "(accepted)");
  CHECK(refused(called + R"({"role":"tool","tool_call_id":"c9","content":"1"}]})") ==
        "messages[2].tool_call_id");
  CHECK(refused(R"({"messages":[{"role":"user","content":"x"},)"
                R"({"role":"tool","tool_call_id":"c1","content":"1"}]})") ==
        "messages[1].tool_call_id");
  CHECK(refused(R"({"messages":[{"role":"user","content":"x","tool_calls":[]}]})") ==
        "messages[0].tool_calls");
  CHECK(refused(R"({"messages":[{"role":"assistant","content":null,"tool_calls":[{"function":)"
                R"({"name":"f","arguments":"[1]"}}]}]})") ==
        "messages[0].tool_calls[0].function.arguments");
  CHECK(refused(R"({"messages":[{"role":"assistant","content":null}]})") == "messages[0].content");
  // Completions take no tools.
  try {
    parse_completion_request(R"({"prompt":"x","tools":[]})", false, specd::SamplingConfig{});
    FAIL("accepted");
  } catch (const RequestError& e) {
    CHECK(e.param == "tools");
  }
}

TEST_CASE("each family lays out tools, calls and results as its template does") {
  const ToolFunction weather{"get_weather", "Weather in a city", R"({"type":"object"})"};
  const std::vector<ChatMessage> chat = {
      {"system", "Be brief."},
      {"user", "Weather in Oslo?"},
      {"assistant", "", {{"call_1", "get_weather", R"({"city":"Oslo"})"}}},
      {"tool", "-3 C", {}, "call_1"},
      {"tool", "windy", {}, "call_1"}};
  const std::string tool_line =
      R"({"type": "function", "function": {"name": "get_weather", "description": )"
      R"("Weather in a city", "parameters": {"type":"object"}}})";
  CHECK(render_chat(ChatFamily::chatml, chat, {weather}) ==
        "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to "
        "assist with the user query.\n\nYou are provided with function signatures within "
        "<tools></tools> XML tags:\n<tools>\n" +
            tool_line +
            "\n</tools>\n\nFor each function call, return a json object with function name and "
            "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
            "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nWeather in Oslo?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
            "{\"city\":\"Oslo\"}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n-3 C\n</tool_response>\n<tool_response>\nwindy\n"
            "</tool_response><|im_end|>\n<|im_start|>assistant\n");
  const std::string llama = render_chat(ChatFamily::llama3, chat, {weather});
  CHECK(
      llama.rfind("<|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n\nBe brief."
                  "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nGiven the following "
                  "functions",
                  0) == 0);
  CHECK(llama.find(tool_line + "\n\nWeather in Oslo?<|eot_id|>") != std::string::npos);
  CHECK(llama.find("<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", "
                   "\"parameters\": {\"city\":\"Oslo\"}}<|eot_id|><|start_header_id|>ipython"
                   "<|end_header_id|>\n\n-3 C<|eot_id|>") != std::string::npos);
  const std::string mistral = render_chat(ChatFamily::mistral, chat, {weather});
  CHECK(mistral ==
        "[AVAILABLE_TOOLS] [" + tool_line +
            "][/AVAILABLE_TOOLS][INST] Be brief.\n\nWeather in Oslo? [/INST][TOOL_CALLS] "
            "[{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}, \"id\": "
            "\"call_1\"}]</s>[TOOL_RESULTS] {\"content\": \"-3 C\", \"call_id\": \"call_1\"}"
            "[/TOOL_RESULTS][TOOL_RESULTS] {\"content\": \"windy\", \"call_id\": \"call_1\"}"
            "[/TOOL_RESULTS]");
  // The JSON of calls and tools is content: a special token's text inside stays text.
  for (const ChatSegment& s : render_chat_segments(ChatFamily::chatml, chat, {weather}))
    if (s.text.find("get_weather") != std::string::npos) CHECK_FALSE(s.scaffolding);
  CHECK_THROWS_AS(render_chat(ChatFamily::phi3, chat, {}), std::invalid_argument);
  CHECK_THROWS_AS(render_chat(ChatFamily::gemma, {{"user", "x"}}, {weather}),
                  std::invalid_argument);
  CHECK_NOTHROW(render_chat(ChatFamily::gemma, {{"user", "x"}}, {}));
}

TEST_CASE("calls are found in outputs of each family, and only well-formed ones") {
  const std::vector<ToolFunction> tools = {{"get_weather", "", "{}"}, {"get_time", "", "{}"}};
  auto calls =
      parse_tool_calls(ChatFamily::chatml,
                       "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", "
                       "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>"
                       "{\"name\":\"get_time\",\"arguments\":\"{\\\"zone\\\":\\\"UTC\\\"}\"}"
                       "</tool_call>",
                       tools, "seed");
  REQUIRE(calls);
  CHECK(calls->content == "Let me check.");
  REQUIRE(calls->calls.size() == 2);
  CHECK(calls->calls[0].name == "get_weather");
  CHECK(calls->calls[0].arguments == R"({"city":"Oslo"})");
  CHECK(calls->calls[1].arguments == R"({"zone":"UTC"})");  // arguments given as JSON text
  CHECK(calls->calls[0].id.size() == 14);
  CHECK(calls->calls[0].id.rfind("call_", 0) == 0);
  CHECK(calls->calls[0].id != calls->calls[1].id);
  CHECK(parse_tool_calls(ChatFamily::chatml, "<tool_call>{\"name\":\"get_time\"}</tool_call>",
                         tools, "seed")
            ->calls[0]
            .arguments == "{}");
  for (const char* text : {"It is cold.", "<tool_call>\n{\"name\": \"get_weather\", \"argu",
                           "<tool_call>{\"name\":\"rm_rf\",\"arguments\":{}}</tool_call>",
                           "<tool_call>{\"name\":\"get_time\",\"arguments\":[1]}</tool_call>",
                           "<tool_call>not json</tool_call>"}) {
    INFO(text);
    CHECK_FALSE(parse_tool_calls(ChatFamily::chatml, text, tools, "s"));
  }
  calls = parse_tool_calls(ChatFamily::llama3,
                           " <|python_tag|>{\"name\": \"get_time\", \"parameters\": {\"zone\": "
                           "\"CET\"}}",
                           tools, "s");
  REQUIRE(calls);
  CHECK(calls->calls[0].arguments == R"({"zone":"CET"})");
  CHECK(calls->content.empty());
  CHECK_FALSE(
      parse_tool_calls(ChatFamily::llama3, "The answer is {\"name\": \"get_time\"}", tools, "s"));
  calls = parse_tool_calls(ChatFamily::mistral,
                           "[TOOL_CALLS] [{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": "
                           "\"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]",
                           tools, "s");
  REQUIRE(calls);
  CHECK(calls->calls.size() == 2);
  CHECK(parse_tool_calls(ChatFamily::mistral, "[{\"name\": \"get_time\", \"arguments\": {}}]",
                         tools, "s"));
  CHECK_FALSE(parse_tool_calls(ChatFamily::mistral, "[1, 2]", tools, "s"));
}

TEST_CASE("the forcing grammar accepts exactly calls to the request's tools") {
  CompletionRequest r = chat_request(R"(,"tool_choice":"required")");
  std::string g = tool_call_grammar(ChatFamily::chatml, r.tools);
  const std::string oslo =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  const std::string utc =
      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n</tool_call>";
  CHECK(matches(g, oslo));
  CHECK(matches(g, oslo + "\n" + utc));  // parallel calls
  CHECK_FALSE(matches(g, "Sure! " + oslo));
  CHECK_FALSE(
      matches(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  CHECK_FALSE(matches(g,
                      "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": "
                      "\"PST\"}}\n</tool_call>"));
  CHECK_FALSE(matches(g, "<tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call>"));
  // Every sentence of the grammar parses back as calls.
  CHECK(parse_tool_calls(ChatFamily::chatml, oslo + "\n" + utc, r.tools.tools, "s")->calls.size() ==
        2);

  r = chat_request(R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}},)"
                   R"("parallel_tool_calls":false)");
  g = tool_call_grammar(ChatFamily::chatml, r.tools);
  CHECK(matches(g, utc));
  CHECK_FALSE(matches(g, oslo));
  CHECK_FALSE(matches(g, utc + "\n" + utc));
  // A named choice is one call, whatever parallel_tool_calls says.
  r = chat_request(R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}},)"
                   R"("parallel_tool_calls":true)");
  for (ChatFamily family : {ChatFamily::chatml, ChatFamily::mistral}) {
    g = tool_call_grammar(family, r.tools);
    const std::string one = family == ChatFamily::chatml
                                ? utc
                                : "[{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}]";
    CHECK(matches(g, one));
    CHECK_FALSE(matches(g, family == ChatFamily::chatml
                               ? utc + "\n" + utc
                               : "[{\"name\": \"get_time\", \"arguments\": {\"zone\": "
                                 "\"UTC\"}}, {\"name\": \"get_time\", \"arguments\": "
                                 "{\"zone\": \"UTC\"}}]"));
  }
  g = tool_call_grammar(ChatFamily::llama3, r.tools);
  CHECK(matches(g, "{\"name\": \"get_time\", \"parameters\": {\"zone\": \"CET\"}}"));
  CHECK_FALSE(matches(g, "{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}"));
  r = chat_request(R"(,"tool_choice":"required")");
  g = tool_call_grammar(ChatFamily::mistral, r.tools);
  CHECK(matches(g,
                "[{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}, {\"name\": "
                "\"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 2}}]"));
  CHECK_FALSE(matches(g, "[]"));

  // A schema the grammar cannot enforce is refused, naming the tool's parameters.
  r = parse_completion_request(
      R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required","tools":[)" +
          std::string(kTime) +
          R"(,{"type":"function","function":{"name":"f","parameters":{"type":"object",)"
          R"("properties":{"a":{"type":"string","pattern":"a+"}}}}}]})",
      true, specd::SamplingConfig{});
  try {
    tool_call_grammar(ChatFamily::chatml, r.tools);
    FAIL("accepted");
  } catch (const RequestError& e) {
    CHECK(e.param == "tools[1].function.parameters");
    CHECK(std::string(e.what()).find("pattern") != std::string::npos);
  }
}

TEST_CASE("forced calls cut by max_tokens: the whole calls, never the cut text as content") {
  CompletionRequest r = chat_request(R"(,"tool_choice":"required")");
  const std::string oslo =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  ParsedToolCalls p = forced_tool_calls(
      ChatFamily::chatml, oslo + "\n<tool_call>\n{\"name\": \"get_ti", r.tools.tools, "s");
  REQUIRE(p.calls.size() == 1);
  CHECK(p.calls[0].name == "get_weather");
  CHECK(p.content.empty());
  p = forced_tool_calls(ChatFamily::chatml, "<tool_call>\n{\"name\": \"get_weather\", \"argu",
                        r.tools.tools, "s");
  CHECK(p.calls.empty());
  CHECK(p.content.empty());
  p = forced_tool_calls(ChatFamily::mistral, "[{\"name\": \"get_time\", \"argu", r.tools.tools,
                        "s");
  CHECK(p.calls.empty());
  // Whole output: as parse_tool_calls finds it.
  CHECK(forced_tool_calls(ChatFamily::chatml, oslo, r.tools.tools, "s").calls.size() == 1);

  // Answers: a cut call leaves content null and no calls, finish_reason "length"; whole
  // calls then a cut one keep the whole ones, still "length" (the output was cut).
  specd::GenerationResult result;
  result.text = "<tool_call>\n{\"name\": \"get_weather\", \"argu";
  result.stop_reason = "length";
  ResponseInfo info{"chatcmpl-1", "m", 0, true};
  std::vector<std::optional<ParsedToolCalls>> calls = {ParsedToolCalls{}};
  json j = json::parse(completion_json(info, {&result}, nullptr, &calls));
  CHECK(j["choices"][0]["message"]["content"].is_null());
  CHECK_FALSE(j["choices"][0]["message"].contains("tool_calls"));
  CHECK(j["choices"][0]["finish_reason"] == "length");
  calls[0] = forced_tool_calls(ChatFamily::chatml, oslo + "\n<tool", r.tools.tools, "s");
  j = json::parse(completion_json(info, {&result}, nullptr, &calls));
  CHECK(j["choices"][0]["message"]["tool_calls"].size() == 1);
  CHECK(j["choices"][0]["finish_reason"] == "length");
  result.stop_reason = "eos";
  j = json::parse(completion_json(info, {&result}, nullptr, &calls));
  CHECK(j["choices"][0]["finish_reason"] == "tool_calls");

  // A forced stream holds everything from its first byte.
  ToolCallStream forced(ChatFamily::chatml, true, true);
  CHECK(forced.feed("Sure") == "");
  CHECK(forced.feed("<tool_call>") == "");
  CHECK(forced.held() == "Sure<tool_call>");
}

TEST_CASE("a stream holds back only what may be a call") {
  auto [out, held] = stream(ChatFamily::chatml, "Checking. <tool_call>\n{\"name\": \"x\"}");
  CHECK(out == "Checking. ");
  CHECK(held == "<tool_call>\n{\"name\": \"x\"}");
  std::tie(out, held) = stream(ChatFamily::chatml, "a <tool_ca");
  CHECK(out == "a ");
  CHECK(held == "<tool_ca");
  std::tie(out, held) = stream(ChatFamily::chatml, "a <tool_cat> b");
  CHECK(out == "a <tool_cat> b");
  CHECK(held.empty());
  std::tie(out, held) = stream(ChatFamily::llama3, "  {\"name\": \"get_time\"}");
  CHECK(out.empty());
  CHECK(held == "  {\"name\": \"get_time\"}");
  std::tie(out, held) = stream(ChatFamily::llama3, "<|python_tag|>{}");
  CHECK(out.empty());
  std::tie(out, held) = stream(ChatFamily::llama3, "<b>Hello</b>");
  CHECK(out == "<b>Hello</b>");
  std::tie(out, held) = stream(ChatFamily::mistral, "It is [cold].");
  CHECK(out == "It is [cold].");
  std::tie(out, held) = stream(ChatFamily::mistral, "[TOOL_CALLS] [");
  CHECK(out.empty());
  ToolCallStream off(ChatFamily::chatml, false);
  CHECK(off.feed("<tool_call>") == "<tool_call>");
}

TEST_CASE("calls answer in OpenAI's message and stream shapes") {
  specd::GenerationResult result;
  result.text = "<tool_call>...";
  result.stop_reason = "eos";
  ResponseInfo info{"chatcmpl-1", "m", 0, true};
  ParsedToolCalls parsed{"", {{"call_abc", "get_time", R"({"zone":"UTC"})"}}};
  std::vector<std::optional<ParsedToolCalls>> calls = {parsed};
  json j = json::parse(completion_json(info, {&result}, nullptr, &calls));
  const json& choice = j["choices"][0];
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["message"]["content"].is_null());
  CHECK(choice["message"]["tool_calls"][0]["id"] == "call_abc");
  CHECK(choice["message"]["tool_calls"][0]["type"] == "function");
  CHECK(choice["message"]["tool_calls"][0]["function"]["arguments"] == R"({"zone":"UTC"})");
  calls[0].reset();
  j = json::parse(completion_json(info, {&result}, nullptr, &calls));
  CHECK(j["choices"][0]["message"]["content"] == "<tool_call>...");
  CHECK(j["choices"][0]["finish_reason"] == "stop");
  const std::string event = tool_calls_event(info, parsed.calls, true);
  REQUIRE(event.rfind("data: ", 0) == 0);
  j = json::parse(event.substr(6));
  CHECK(j["choices"][0]["delta"]["role"] == "assistant");
  CHECK(j["choices"][0]["delta"]["tool_calls"][0]["index"] == 0);
  CHECK(j["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "get_time");
}

TEST_CASE("qwen3.5's XML calls: found in outputs, typed by the schema, forced by a grammar") {
  const CompletionRequest r = chat_request("");
  const std::string oslo =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\n42 Oslo\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
  const std::string utc =
      "<tool_call>\n<function=get_time>\n<parameter=zone>\n\"UTC\"\n</parameter>\n</function>\n"
      "</tool_call>";
  auto parsed = parse_tool_calls(ChatFamily::qwen35, "Checking.\n\n" + oslo + "\n" + utc,
                                 r.tools.tools, "seed");
  REQUIRE(parsed);
  CHECK(parsed->content == "Checking.");
  REQUIRE(parsed->calls.size() == 2);
  CHECK(parsed->calls[0].name == "get_weather");
  // city is a string by its schema (even one that reads as a number); days parses as JSON.
  CHECK(parsed->calls[0].arguments == R"({"city":"42 Oslo","days":3})");
  CHECK(parsed->calls[1].arguments == R"({"zone":"UTC"})");
  // A call to a tool the request lacks, or a block cut off, is plain content.
  CHECK_FALSE(parse_tool_calls(ChatFamily::qwen35,
                               "<tool_call>\n<function=get_stock>\n</function>\n</tool_call>",
                               r.tools.tools, "s"));
  CHECK_FALSE(parse_tool_calls(ChatFamily::qwen35, oslo.substr(0, 40), r.tools.tools, "s"));
  // Rendering a call and parsing it back gives the call.
  const ToolCall call{"", "get_weather", R"({"city":"Bergen","days":2})"};
  const std::string rendered =
      render_chat(ChatFamily::qwen35, {{"user", "?"}, {"assistant", "", {call}}}, r.tools.tools);
  const size_t at = rendered.rfind("<tool_call>");  // after the instructions' example
  REQUIRE(at != std::string::npos);
  const std::string block = rendered.substr(at, rendered.rfind("</tool_call>") + 12 - at);
  auto back = parse_tool_calls(ChatFamily::qwen35, block, r.tools.tools, "s");
  REQUIRE(back);
  CHECK(back->calls[0].arguments == call.arguments);
  // The forcing grammar: required parameters, string values as text, others by schema.
  const std::string g =
      tool_call_grammar(ChatFamily::qwen35, chat_request(R"(,"tool_choice":"required")").tools);
  CHECK(matches(g, oslo));
  CHECK(matches(g, oslo + "\n" + utc));
  CHECK_FALSE(matches(g, "Sure! " + oslo));
  CHECK_FALSE(matches(  // city is required
      g, "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>"));
  CHECK_FALSE(matches(  // days must be an integer
      g,
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
      "<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>"));
}
