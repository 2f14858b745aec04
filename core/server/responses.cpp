#include "server/responses.hpp"

#include <nlohmann/json.hpp>

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
  return {{"id", info.id},
          {"object",
           info.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", info.created},
          {"model", info.model}};
}

// Invalid UTF-8 never reaches here (the detokenizer shows it as U+FFFD), but a dump must
// not throw on it either way.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string finish_reason(const std::string& stop_reason) {
  return stop_reason == "length" || stop_reason == "context" ? "length" : "stop";
}

std::string usage_json(const GenerationStats& stats, size_t completion_tokens) {
  return dump(usage(stats, completion_tokens));
}

std::string completion_json(const ResponseInfo& info, const GenerationResult& r) {
  json j = head(info, false);
  json choice = {{"index", 0}, {"finish_reason", finish_reason(r.stop_reason)}};
  if (info.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", r.text}};
  } else {
    choice["text"] = r.text;
    choice["logprobs"] = nullptr;
  }
  j["choices"] = json::array({choice});
  j["usage"] = usage(r.stats, r.tokens.size());
  return dump(j);
}

std::string chunk_event(const ResponseInfo& info, const std::string& text, bool first,
                        const std::string& finish) {
  json j = head(info, true);
  json choice = {{"index", 0}};
  if (info.chat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!text.empty() || finish.empty()) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  choice["finish_reason"] = finish.empty() ? json(nullptr) : json(finish);
  j["choices"] = json::array({choice});
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
  json e = {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}};
  return dump(json{{"error", e}});
}

}  // namespace specd::server
