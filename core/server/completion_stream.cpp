#include "server/completion_stream.hpp"

#include <algorithm>
#include <utility>

#include "server/llama_completion.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd::server {

using batching::RequestEvent;

namespace {

// The seed of a choice's call ids: the same streamed and not.
std::string call_seed(const CompletionFormat& f, size_t choice) {
  return f.info.id + "-" + std::to_string(choice);
}

bool is_harmony(const CompletionFormat& f) {
  return f.info.chat && !f.llama && f.family == ChatFamily::harmony;
}

// What a harmony chat's output is read with: its calls only where tools are active.
HarmonyStream harmony_reader(const CompletionFormat& f, size_t choice) {
  return HarmonyStream(f.tools ? f.functions : std::vector<ToolFunction>{}, call_seed(f, choice),
                       f.opened_call);
}

}  // namespace

// One choice's stream: its chunks' index, whether its first chunk is out, the logprob
// entries since its last chunk, text held back while it may be a tool call (or a harmony
// chat's reader), its result.
struct CompletionStream::Choice {
  ResponseInfo info;
  bool first = true;
  std::vector<TokenLogprob> pending;
  LogprobCursor cursor;
  ToolCallStream calls;
  std::optional<HarmonyStream> harmony;
  std::shared_ptr<const GenerationResult> result;
  Choice(const CompletionFormat& f, size_t index)
      : info(f.info), calls(f.family, f.tools, f.forced_calls) {
    info.index = static_cast<int>(index);
    if (is_harmony(f)) harmony.emplace(harmony_reader(f, index));
  }
};

CompletionStream::CompletionStream(CompletionFormat format,
                                   std::vector<std::shared_ptr<batching::Job>> jobs)
    : format_(std::move(format)), jobs_(std::move(jobs)), n_(jobs_.size()) {
  for (size_t i = 0; i < n_; ++i) choices_.push_back(std::make_unique<Choice>(format_, i));
}

CompletionStream::~CompletionStream() = default;

std::vector<LogprobText> CompletionStream::render(const std::vector<TokenLogprob>& entries) const {
  std::vector<LogprobText> out;
  out.reserve(entries.size());
  for (const TokenLogprob& e : entries) {
    LogprobText t;
    t.token = format_.tokenizer->token_to_piece(e.token);
    t.logprob = e.logprob;
    for (const auto& [id, lp] : e.top)
      t.top.emplace_back(format_.tokenizer->token_to_piece(id), lp);
    out.push_back(std::move(t));
  }
  return out;
}

std::string CompletionStream::chunk(Choice& c, const std::string& text, const std::string& finish,
                                    const std::string& reasoning) {
  std::vector<LogprobText> texts;
  if (format_.logprobs) texts = render(c.pending);
  c.pending.clear();
  std::string event = chunk_event(c.info, text, c.first, finish,
                                  format_.logprobs ? &texts : nullptr, &c.cursor, reasoning);
  c.first = false;
  return event;
}

bool CompletionStream::harmony() const {
  return is_harmony(format_);
}

// Reasoning and content in chunks of their own, in the order the model wrote them (a delta
// holds reasoning before content: a piece ends the analysis before it starts the answer).
void CompletionStream::push_delta(Choice& c, const HarmonyDelta& delta) {
  if (!delta.reasoning.empty()) events_.push_back(chunk(c, "", "", delta.reasoning));
  if (!delta.content.empty()) events_.push_back(chunk(c, delta.content, ""));
}

// The events that end a streamed choice: its held text as calls or content, then the
// finish chunk.
void CompletionStream::finish(Choice& c, const GenerationResult& result) {
  if (format_.llama) {
    events_.push_back("data: " + llama_final_json(c.info, result, true, format_.return_tokens) +
                      "\n\n");
    return;
  }
  if (c.harmony) {
    push_delta(c, c.harmony->finish());
    const ParsedToolCalls& parsed = c.harmony->parsed();
    if (!parsed.calls.empty()) {
      events_.push_back(tool_calls_event(c.info, parsed.calls, c.first));
      c.first = false;
    }
    events_.push_back(chunk(c, "", finish_reason(result.stop_reason, parsed)));
    return;
  }
  std::string reason = finish_reason(result.stop_reason);
  if (!c.calls.held().empty()) {
    std::optional<ParsedToolCalls> parsed =
        calls_in(c.calls.held(), static_cast<size_t>(c.info.index));
    if (parsed) {
      if (!parsed->calls.empty()) {
        events_.push_back(tool_calls_event(c.info, parsed->calls, c.first));
        c.first = false;
      }
      if (!parsed->content.empty()) events_.push_back(chunk(c, parsed->content, ""));
      reason = finish_reason(result.stop_reason, *parsed);
    } else {
      events_.push_back(chunk(c, c.calls.held(), ""));
    }
  }
  events_.push_back(chunk(c, "", reason));
}

void CompletionStream::add(const RequestEvent& e) {
  if (e.choice >= n_) return;
  Choice& c = *choices_[e.choice];
  const bool chat = format_.info.chat;
  std::optional<RequestError> failure;
  switch (e.kind) {
    case RequestEvent::Kind::started:
      ++started_;
      c.info.prompt_tokens = jobs_[e.choice]->request.prompt.size();
      if (format_.stream && !echo_of(e.choice).empty())
        events_.push_back(chunk(c, echo_of(e.choice), ""));
      return;
    case RequestEvent::Kind::refused:
      if (!refusal_) refusal_ = request_error(*e.refusal, chat);
      return;
    case RequestEvent::Kind::logprob:
      if (format_.stream && format_.logprobs) c.pending.push_back(e.logprob);
      return;
    case RequestEvent::Kind::text: {
      if (!format_.stream) return;
      c.info.completion_tokens = e.tokens;
      if (c.harmony) {
        push_delta(c, c.harmony->feed(e.text));
        return;
      }
      const std::string piece = c.calls.feed(e.text);
      if (piece.empty() && !e.text.empty()) return;
      events_.push_back(format_.llama ? llama_chunk_event(c.info, piece) : chunk(c, piece, ""));
      return;
    }
    case RequestEvent::Kind::done:
      // Cut short by the drain deadline: an error, so that no client takes the text so far
      // for a finished answer (OpenAI has no finish_reason for it; 503 is retryable).
      if (e.result->stop_reason == "cancelled" && jobs_[e.choice]->shut_down) {
        failure.emplace(503, "",
                        "the server shut down before this request finished: cancelled at the "
                        "drain deadline ([server] drain_timeout_s) after " +
                            std::to_string(e.result->tokens.size()) + " generated tokens; retry it",
                        "drain_timeout");
      } else {
        c.result = e.result;
        c.info.completion_tokens = c.result->tokens.size();
        if (format_.stream) finish(c, *c.result);
      }
      break;
    case RequestEvent::Kind::failed:
      failure = request_error(*e.refusal, chat);
      break;
  }
  if (failure) {
    if (!error_) error_ = failure;
    if (format_.stream)
      events_.push_back(
          "data: " +
          error_json(failure->what(), error_type(failure->status), failure->param, failure->code) +
          "\n\n");
  }
  if (++ended_ == n_ && format_.stream && !format_.llama) {
    if (format_.include_usage && !error_) {
      std::vector<const GenerationResult*> results;
      for (const auto& ch : choices_) results.push_back(ch->result.get());
      events_.push_back(
          usage_event(format_.info, combined_usage(results, format_.info.per_prompt)));
    }
    events_.push_back(done_event());
  }
}

std::deque<std::string> CompletionStream::take_events() {
  std::deque<std::string> out;
  out.swap(events_);
  return out;
}

std::optional<ParsedToolCalls> CompletionStream::calls_in(std::string_view text,
                                                          size_t choice) const {
  const std::string seed = call_seed(format_, choice);
  if (format_.forced_calls) return forced_tool_calls(format_.family, text, format_.functions, seed);
  return parse_tool_calls(format_.family, text, format_.functions, seed);
}

const std::string& CompletionStream::echo_of(size_t choice) const {
  static const std::string none;
  const size_t prompt = choice / std::max<size_t>(format_.info.per_prompt, 1);
  return prompt < format_.echo.size() ? format_.echo[prompt] : none;
}

std::string CompletionStream::body() const {
  if (format_.llama) {  // one object, or an array of them for a batch of prompts
    std::string all;
    for (const auto& c : choices_) {
      if (!all.empty()) all += ',';
      all += llama_final_json(c->info, *c->result, false, format_.return_tokens);
    }
    return n_ == 1 ? all : "[" + all + "]";
  }
  std::vector<const GenerationResult*> results;
  std::vector<GenerationResult> echoed;  // `echo`: copies with the prompt's text first
  echoed.reserve(n_);
  for (size_t i = 0; i < n_; ++i) {
    results.push_back(choices_[i]->result.get());
    if (echo_of(i).empty()) continue;
    echoed.push_back(*results.back());
    echoed.back().text = echo_of(i) + echoed.back().text;
    results.back() = &echoed.back();
  }
  std::vector<std::vector<LogprobText>> texts;
  if (format_.logprobs)
    for (const GenerationResult* r : results) texts.push_back(render(r->logprobs));
  std::vector<std::optional<ParsedToolCalls>> calls(n_);
  for (size_t i = 0; i < n_; ++i) {
    if (harmony()) {  // always read: the reasoning is apart from the content
      HarmonyStream reader = harmony_reader(format_, i);
      reader.feed(results[i]->text);
      reader.finish();
      calls[i] = reader.parsed();
    } else if (format_.tools) {
      calls[i] = calls_in(results[i]->text, i);
    }
  }
  return completion_json(format_.info, results, format_.logprobs ? &texts : nullptr, &calls);
}

}  // namespace specd::server
