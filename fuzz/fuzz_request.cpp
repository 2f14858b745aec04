// specd serve's request parser, chat templates and response encoding: any body either gives
// a typed request or throws server::RequestError (request.hpp); a parsed chat renders with
// every family (a family without a tool format refuses tools with std::invalid_argument),
// its tools give a call grammar or a RequestError, every message's text goes through the
// tool-call parsers and the stream splitter, and any text (invalid UTF-8 included) encodes
// into an SSE chunk. Input layout: one byte choosing completions (bit 0 clear) or chat (set),
// and for completions llama-server's /completion body (bit 1 set), then the body.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "server/chat_template.hpp"
#include "server/llama_completion.hpp"
#include "server/request.hpp"
#include "server/responses.hpp"
#include "server/tool_calls.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const bool llama = !chat && (data[0] & 2);
  specd::SamplingConfig defaults;
  try {
    std::string translated;
    if (llama) translated = specd::server::llama_completion_request(body).openai_body;
    specd::server::CompletionRequest r = specd::server::parse_completion_request(
        llama ? std::string_view(translated) : body, chat, defaults);
    specd::server::ResponseInfo info{"id", "model", 0, chat};
    std::string text;
    for (const auto& p : r.prompts) text += p.text;
    for (auto family : {specd::server::ChatFamily::chatml, specd::server::ChatFamily::llama3,
                        specd::server::ChatFamily::mistral, specd::server::ChatFamily::phi3,
                        specd::server::ChatFamily::gemma}) {
      if (!chat) continue;
      try {
        text += specd::server::render_chat(family, r.messages, r.tools.tools);
      } catch (const std::invalid_argument&) {
        if (specd::server::family_has_tools(family)) throw;  // only those without a format
      }
      if (!specd::server::family_has_tools(family)) continue;
      for (const auto& m : r.messages) {
        (void)specd::server::parse_tool_calls(family, m.content, r.tools.tools, "id");
        (void)specd::server::forced_tool_calls(family, m.content, r.tools.tools, "id");
        specd::server::ToolCallStream stream(family, true);
        for (size_t i = 0; i < m.content.size(); i += 3)
          text += stream.feed(m.content.substr(i, 3));
      }
      if (r.tools.forced()) (void)specd::server::tool_call_grammar(family, r.tools);
    }
    (void)specd::server::chunk_event(info, text, true, "");
  } catch (const specd::server::RequestError& e) {
    (void)specd::server::error_json(e.what(), "invalid_request_error", e.param, e.code);
  }
  (void)specd::server::detect_chat_family(body);
  return 0;
}
