// One completion request's answer, assembled from its choices' batching events (n for each
// prompt; choice i answers prompt i / n, as OpenAI indexes a batch)
// (batching/request_events.hpp), on the HTTP handler's thread: the SSE chunks as the events
// come (text held back while it may be a tool call, logprob entries with their token
// texts; a harmony chat's output read by harmony_output.hpp into reasoning_content, content
// and calls), the finish chunk of each choice, usage and [DONE]; or, not streamed, the whole
// body at the end. A choice cut short by the server's drain deadline ends in an error, not
// in a finished answer.
//
// Thread rule: one thread at a time (the handler, then the stream's content provider).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batching/request_events.hpp"
#include "batching/scheduler.hpp"
#include "server/chat_template.hpp"
#include "server/harmony_output.hpp"
#include "server/request.hpp"
#include "server/responses.hpp"
#include "server/tool_calls.hpp"

namespace specd {
class Tokenizer;
}

namespace specd::server {

struct CompletionFormat {
  ResponseInfo info;  // index 0; each choice's chunks carry their own
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  ChatFamily family = ChatFamily::chatml;  // chat: how tool calls are written
  bool tools = false;                      // chat with tools: calls are parsed out
  bool forced_calls = false;  // tool_choice required or named: the output is calls alone
  std::vector<ToolFunction> functions;
  std::string opened_call;  // harmony, forced: the function whose call the prompt opened
  const Tokenizer* tokenizer = nullptr;  // the target's: logprob entries' texts
  // Completions' `echo`: per prompt, its text, put before each of its choices' text.
  std::vector<std::string> echo;
  // llama-server's /completion: its answer shapes (llama_completion.hpp), no usage chunk
  // and no [DONE]; `return_tokens` answers the token ids.
  bool llama = false;
  bool return_tokens = false;
};

class CompletionStream {
 public:
  // `jobs`: the request's choices, by index (their shut_down flags are read).
  CompletionStream(CompletionFormat format, std::vector<std::shared_ptr<batching::Job>> jobs);
  ~CompletionStream();

  void add(const batching::RequestEvent& event);

  // Every choice started, or one was refused (refusal()).
  bool settled() const { return refusal_ || started_ == n_; }
  const std::optional<RequestError>& refusal() const { return refusal_; }
  // Every started choice has ended (done or failed).
  bool ended() const { return ended_ == n_; }
  // The first choice that failed (after it started).
  const std::optional<RequestError>& error() const { return error_; }
  // Streamed: the SSE events made so far and not yet taken.
  std::deque<std::string> take_events();
  // Not streamed: the response body (ended(), no error()).
  std::string body() const;

 private:
  struct Choice;
  std::string chunk(Choice& c, const std::string& text, const std::string& finish,
                    const std::string& reasoning = {});
  void push_delta(Choice& c, const HarmonyDelta& delta);
  bool harmony() const;
  void finish(Choice& c, const GenerationResult& result);
  std::vector<LogprobText> render(const std::vector<TokenLogprob>& entries) const;
  const std::string& echo_of(size_t choice) const;
  // A choice's calls in its output (forced: always a value; else nullopt for none).
  std::optional<ParsedToolCalls> calls_in(std::string_view text, size_t choice) const;

  CompletionFormat format_;
  std::vector<std::shared_ptr<batching::Job>> jobs_;
  size_t n_;
  std::vector<std::unique_ptr<Choice>> choices_;
  size_t started_ = 0, ended_ = 0;
  std::optional<RequestError> refusal_, error_;
  std::deque<std::string> events_;
};

}  // namespace specd::server
