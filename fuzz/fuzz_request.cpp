// specd serve's request parser, chat templates and response encoding: any body either gives
// a typed request or throws server::RequestError (request.hpp); a parsed chat renders with
// every family (a family without a tool format refuses tools, and the qwen3.5 and harmony
// templates refuse some conversations, with std::invalid_argument), its tools give a call
// grammar or a RequestError, every message's text goes through the tool-call parsers and the
// stream splitter, and any text (invalid UTF-8 included) encodes into an SSE chunk. The input
// is also read as gpt-oss output (harmony_output.hpp): whole, and streamed in pieces, which
// must give the same answer. Input layout: one byte choosing completions (bit 0 clear) or
// chat (set), and for completions llama-server's /completion body (bit 1 set), then the body;
// its bits 2-4 also choose the streamed pieces' size.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "server/chat_template.hpp"
#include "server/harmony_output.hpp"
#include "server/llama_completion.hpp"
#include "server/request.hpp"
#include "server/responses.hpp"
#include "server/tool_calls.hpp"

namespace {

namespace server = specd::server;

// The output read whole and in pieces of `size` bytes: the same reasoning, content and calls.
void read_as_harmony(std::string_view text, const std::vector<server::ToolFunction>& tools,
                     const std::string& opened, size_t size) {
  const server::ParsedToolCalls whole = server::parse_harmony(text, tools, "id", opened);
  server::HarmonyStream stream(tools, "id", opened);
  std::string reasoning, content;
  for (size_t at = 0; at < text.size(); at += size) {
    const server::HarmonyDelta d = stream.feed(text.substr(at, size));
    reasoning += d.reasoning;
    content += d.content;
  }
  const server::HarmonyDelta d = stream.finish();
  reasoning += d.reasoning;
  content += d.content;
  const server::ParsedToolCalls& parsed = stream.parsed();
  if (reasoning != whole.reasoning || content != whole.content ||
      parsed.reasoning != whole.reasoning || parsed.content != whole.content ||
      parsed.calls.size() != whole.calls.size())
    std::abort();  // the pieces' boundaries changed the answer
  for (size_t i = 0; i < whole.calls.size(); ++i)
    if (parsed.calls[i].arguments != whole.calls[i].arguments) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const bool llama = !chat && (data[0] & 2);
  specd::SamplingConfig defaults;
  try {
    std::string translated;
    if (llama) translated = server::llama_completion_request(body).openai_body;
    server::CompletionRequest r = server::parse_completion_request(
        llama ? std::string_view(translated) : body, chat, defaults);
    server::ResponseInfo info{"id", "model", 0, chat};
    std::string text;
    for (const auto& p : r.prompts) text += p.text;
    for (auto family :
         {server::ChatFamily::chatml, server::ChatFamily::llama3, server::ChatFamily::mistral,
          server::ChatFamily::phi3, server::ChatFamily::gemma, server::ChatFamily::qwen35,
          server::ChatFamily::harmony}) {
      if (!chat) continue;
      // The templates that raise on a conversation's shape (no user query, a later system
      // message, channel tags in an assistant's text).
      const bool refuses =
          family == server::ChatFamily::qwen35 || family == server::ChatFamily::harmony;
      try {
        text += server::render_chat(family, r.messages, r.tools.tools,
                                    server::ChatOptions{r.reasoning_effort, "2025-06-28"});
      } catch (const std::invalid_argument&) {
        // Only those without a format, or the templates that refuse.
        if (server::family_has_tools(family) && !refuses) throw;
      }
      if (!server::family_has_tools(family)) continue;
      const bool harmony = family == server::ChatFamily::harmony;
      for (const auto& m : r.messages) {
        (void)server::parse_tool_calls(family, m.content, r.tools.tools, "id");
        if (!harmony)
          (void)server::forced_tool_calls(family, m.content, r.tools.tools, "id");
        else if (!r.tools.tools.empty())
          (void)server::forced_tool_calls(family, m.content, r.tools.tools, "id",
                                          r.tools.tools.front().name);
        server::ToolCallStream stream(family, true);
        for (size_t i = 0; i < m.content.size(); i += 3)
          text += stream.feed(m.content.substr(i, 3));
      }
      if (r.tools.forced()) {
        std::string opened;
        (void)server::tool_call_grammar(family, r.tools, &opened);
        if (harmony != !opened.empty()) std::abort();  // harmony's prompt opens the call
      }
    }
    (void)server::chunk_event(info, text, true, "");
  } catch (const server::RequestError& e) {
    (void)server::error_json(e.what(), "invalid_request_error", e.param, e.code);
  }
  (void)server::detect_chat_family(body);
  // The input as gpt-oss's output, with calls to these functions.
  const std::vector<server::ToolFunction> tools = {{"get_weather", "", "{}"}, {"f", "", "{}"}};
  const size_t piece = 1 + ((data[0] >> 2) & 7);
  read_as_harmony(body, tools, "", piece);
  read_as_harmony(body, {}, "", piece + 1);
  read_as_harmony(body, tools, "f", piece);
  return 0;
}
