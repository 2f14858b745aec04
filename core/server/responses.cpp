#include "server/responses.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/log.hpp"
#include "server/client_redaction.hpp"

namespace specd::server {
namespace {

using nlohmann::json;

json usage(const GenerationStats& s, size_t completion_tokens) {
  return {{"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", s.prompt_tokens + completion_tokens},
          {"drafted_tokens", s.drafted},
          {"accepted_tokens", s.accepted},
          {"tau", s.tau()}};
}

json head(const ResponseInfo& info, bool chunk) {
  json j = {{"id", info.id},
            {"object",
             info.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
            {"created", info.created},
            {"model", info.model}};
  if (chunk && info.running_usage)
    j["usage"] = {{"prompt_tokens", info.prompt_tokens},
                  {"completion_tokens", info.completion_tokens},
                  {"total_tokens", info.prompt_tokens + info.completion_tokens}};
  return j;
}

// Invalid UTF-8 never reaches here (the detokenizer shows it as U+FFFD), but a dump must
// not throw on it either way.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json bytes_of(const std::string& text) {
  json b = json::array();
  for (unsigned char c : text) b.push_back(int(c));
  return b;
}

json logprobs_json(bool chat, const std::vector<LogprobText>& entries, LogprobCursor& cursor) {
  if (chat) {
    json content = json::array();
    for (const LogprobText& e : entries) {
      json top = json::array();
      for (const auto& [text, lp] : e.top)
        top.push_back({{"token", text}, {"logprob", lp}, {"bytes", bytes_of(text)}});
      content.push_back({{"token", e.token},
                         {"logprob", e.logprob},
                         {"bytes", bytes_of(e.token)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  for (const LogprobText& e : entries) {
    tokens.push_back(e.token);
    token_logprobs.push_back(e.logprob);
    json alternatives = json::object();
    for (const auto& [text, lp] : e.top) alternatives[text] = lp;
    top.push_back(alternatives);
    offsets.push_back(cursor.text_offset);
    cursor.text_offset += e.token.size();
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top},
          {"text_offset", offsets}};
}

}  // namespace

std::string finish_reason(const std::string& stop_reason) {
  return stop_reason == "length" || stop_reason == "context" ? "length" : "stop";
}

std::string finish_reason(const std::string& stop_reason, const ParsedToolCalls& calls) {
  const std::string plain = finish_reason(stop_reason);
  return calls.calls.empty() || plain == "length" ? plain : "tool_calls";
}

std::string usage_json(const GenerationStats& stats, size_t completion_tokens) {
  return dump(usage(stats, completion_tokens));
}

GenerationResult combined_usage(const std::vector<const GenerationResult*>& choices,
                                size_t per_prompt) {
  GenerationResult all;
  per_prompt = std::max<size_t>(per_prompt, 1);
  for (size_t i = 0; i < choices.size(); i += per_prompt)
    all.stats.prompt_tokens += choices[i]->stats.prompt_tokens;
  for (const GenerationResult* r : choices) {
    all.tokens.insert(all.tokens.end(), r->tokens.begin(), r->tokens.end());
    all.stats.drafted += r->stats.drafted;
    all.stats.accepted += r->stats.accepted;
    all.stats.rounds += r->stats.rounds;
    all.stats.generated_tokens += r->stats.generated_tokens;
  }
  return all;
}

static json calls_json(const std::vector<ToolCall>& calls, bool indexed) {
  json list = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json c = {{"id", calls[i].id},
              {"type", "function"},
              {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (indexed) c["index"] = i;
    list.push_back(c);
  }
  return list;
}

std::string completion_json(const ResponseInfo& info,
                            const std::vector<const GenerationResult*>& choices,
                            const std::vector<std::vector<LogprobText>>* logprobs,
                            const std::vector<std::optional<ParsedToolCalls>>* tool_calls) {
  json j = head(info, false);
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const GenerationResult& r = *choices[i];
    json choice = {{"index", i}, {"finish_reason", finish_reason(r.stop_reason)}};
    const ParsedToolCalls* calls = tool_calls && (*tool_calls)[i] ? &*(*tool_calls)[i] : nullptr;
    if (calls) {
      choice["message"] = {
          {"role", "assistant"},
          {"content", calls->content.empty() ? json(nullptr) : json(calls->content)}};
      if (!calls->reasoning.empty()) choice["message"]["reasoning_content"] = calls->reasoning;
      if (!calls->calls.empty()) choice["message"]["tool_calls"] = calls_json(calls->calls, false);
      choice["finish_reason"] = finish_reason(r.stop_reason, *calls);
    } else if (info.chat)
      choice["message"] = {{"role", "assistant"}, {"content", r.text}};
    else
      choice["text"] = r.text;
    LogprobCursor cursor;
    choice["logprobs"] =
        logprobs ? logprobs_json(info.chat, (*logprobs)[i], cursor) : json(nullptr);
    list.push_back(choice);
  }
  j["choices"] = list;
  const GenerationResult all = combined_usage(choices, info.per_prompt);
  j["usage"] = usage(all.stats, all.tokens.size());
  return dump(j);
}

std::string chunk_event(const ResponseInfo& info, const std::string& text, bool first,
                        const std::string& finish, const std::vector<LogprobText>* logprobs,
                        LogprobCursor* cursor, const std::string& reasoning) {
  json j = head(info, true);
  json choice = {{"index", info.index}};
  if (info.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
    if (!text.empty() || (finish.empty() && reasoning.empty())) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  LogprobCursor none;
  choice["logprobs"] =
      logprobs ? logprobs_json(info.chat, *logprobs, cursor ? *cursor : none) : json(nullptr);
  choice["finish_reason"] = finish.empty() ? json(nullptr) : json(finish);
  j["choices"] = json::array({choice});
  return "data: " + dump(j) + "\n\n";
}

std::string tool_calls_event(const ResponseInfo& info, const std::vector<ToolCall>& calls,
                             bool first) {
  json j = head(info, true);
  json delta = {{"tool_calls", calls_json(calls, true)}};
  if (first) delta["role"] = "assistant";
  j["choices"] = json::array({{{"index", info.index},
                               {"delta", delta},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr}}});
  return "data: " + dump(j) + "\n\n";
}

std::string usage_event(const ResponseInfo& info, const GenerationResult& r) {
  json j = head(info, true);
  j["choices"] = json::array();
  j["usage"] = usage(r.stats, r.tokens.size());
  return "data: " + dump(j) + "\n\n";
}

std::string done_event() {
  return "data: [DONE]\n\n";
}

std::string error_json(const std::string& message, const std::string& type,
                       const std::string& param, const std::string& code) {
  const std::string shown = redact_for_client(message);
  if (shown != message) log_message(LogLevel::info, "answered a client, paths hidden: " + message);
  json e = {{"message", shown},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}};
  return dump(json{{"error", e}});
}

std::string error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 404) return "not_found_error";
  if (status == 503) return "server_overloaded";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

}  // namespace specd::server
