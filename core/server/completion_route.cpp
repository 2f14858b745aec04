// The completion routes (/v1/completions, /v1/chat/completions, llama-server's
// /completion): a request checked once, fanned out into one job per choice, answered whole or
// streamed.
#include <atomic>
#include <chrono>
#include <deque>

#include "common/memory_release.hpp"
#include "server/completion_stream.hpp"
#include "server/http_server_impl.hpp"
#include "server/llama_completion.hpp"
#include "server/peer_socket.hpp"
#include "server/request.hpp"

namespace specd::server {
namespace {

// The event queue of one request's jobs. Each finished generation is counted in the metrics
// as the worker ends it, also when its client has gone and nobody takes the event, and its
// latencies are timed as the worker pushes its events (created just before submission).
class CountedEvents : public batching::EventQueue {
 public:
  // `choices` in all, `per_prompt` to a prompt (its first counts the prompt's tokens).
  CountedEvents(Metrics& metrics, size_t choices, size_t per_prompt)
      : metrics_(metrics), per_prompt_(per_prompt), choices_(choices) {}
  void push(batching::RequestEvent e) override {
    using Kind = batching::RequestEvent::Kind;
    if (e.choice < choices_.size()) {
      Timing& t = choices_[e.choice];
      const Clock::time_point now = Clock::now();
      if (e.kind == Kind::started) {
        t.started = now;  // observed once it ends other than cancelled (admitted for real)
      } else if (e.kind == Kind::text && e.tokens > t.tokens) {
        const size_t arrived = e.tokens - t.tokens;
        if (t.tokens == 0)
          metrics_.observe(Latency::time_to_first_token, seconds(now - submitted_));
        else
          metrics_.observe(Latency::inter_token, seconds(now - t.last) / double(arrived), arrived);
        t.tokens = e.tokens;
        t.last = now;
      } else if (e.kind == Kind::done) {
        const GenerationResult& r = *e.result;
        metrics_.generation(r.stats, e.choice % per_prompt_ == 0 ? r.stats.prompt_tokens : 0,
                            r.tokens.size());
        if (r.stop_reason == "cancelled") {
          metrics_.cancelled();
        } else {
          metrics_.observe(Latency::queue, seconds(t.started - submitted_));
          metrics_.observe(Latency::end_to_end, seconds(now - submitted_));
          metrics_.observe(Latency::prefill, r.stats.prefill_s);
          metrics_.observe(Latency::decode, r.stats.generate_s);
          if (r.stats.drafted > 0)
            metrics_.observe(Latency::acceptance,
                             double(r.stats.accepted) / double(r.stats.drafted));
        }
      }
    }
    EventQueue::push(std::move(e));
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Timing {
    size_t tokens = 0;  // generated when its last text came
    Clock::time_point started, last;
  };
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  Metrics& metrics_;
  size_t per_prompt_;
  const Clock::time_point submitted_ = Clock::now();
  std::vector<Timing> choices_;  // touched by the scheduler's worker only
};

// Choice i's seed: the request's for the first, then a splitmix64 step away from it for each
// other, so choices are reproducible and do not repeat each other.
uint64_t choice_seed(uint64_t seed, size_t i) {
  if (i == 0) return seed;
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * i;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (z ^ (z >> 31)) & INT64_MAX;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Counts a request from its handler's start until its response is gone (for a stream, until
// the listener drops the stream holding this).
class InFlight {
 public:
  explicit InFlight(std::atomic<int>& count) : count_(count) { ++count_; }
  ~InFlight() { --count_; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  std::atomic<int>& count_;
};

}  // namespace

void HttpServer::Impl::complete(const HttpRequest& req, HttpResponse& res, bool chat, bool llama) {
  // A large body (a schema, a grammar, tools) parses into megabytes that glibc would keep
  // once this request is done, answered or refused.
  struct ReleaseAfter {
    bool large;
    ~ReleaseAfter() {
      if (large) release_freed_memory();
    }
  } release{req.body.size() > 64 * 1024};
  auto guard = std::make_shared<InFlight>(in_flight);
  if (draining) {
    send_error(res, 503, "the server is shutting down", "", "shutting_down");
    return;
  }
  // Checked once, here: parsed, encoded and bounded before the scheduler sees it.
  CompletionRequest request;
  LlamaCompletion llama_request;
  try {
    if (llama) {
      llama_request = llama_completion_request(req.body);
      request = parse_completion_request(llama_request.openai_body, false, config.sampling);
    } else {
      request = parse_completion_request(req.body, chat, config.sampling);
    }
    if (!request.model.empty() && request.model != model_id)
      throw RequestError(
          404, "model",
          "'model': this server serves '" + model_id + "', not '" + request.model + "'",
          "model_not_found");
    // (Client answers name the server's settings, never its files.)
    if (request.n > config.server.max_n)
      throw RequestError(400, "n",
                         "'n' = " + std::to_string(request.n) +
                             " is more than the server's max_n allows (" +
                             std::to_string(config.server.max_n) + ")");
    // The n choices wait in the queue together: more than it holds could never be let in.
    // A batch of prompts has n choices each; all count against max_n.
    const size_t choices = request.choices();
    if (choices > size_t(config.server.max_n))
      throw RequestError(400, "prompt",
                         std::to_string(request.prompts.size()) + " prompts with 'n' = " +
                             std::to_string(request.n) + " are " + std::to_string(choices) +
                             " choices, more than the server's max_n allows (" +
                             std::to_string(config.server.max_n) + ")");
    // The choices wait in the queue together: more than it holds could never be let in.
    if (choices > 1 && choices > size_t(config.server.queue_limit))
      throw RequestError(400, request.n > 1 ? "n" : "prompt",
                         std::to_string(choices) +
                             " choices are more than the server's queue_limit (" +
                             std::to_string(config.server.queue_limit) +
                             "), and a request's choices wait in its queue together");
    if (chat && !chat_family) throw RequestError(400, "messages", chat_refusal, "chat_template");
    prepare_prompt(request, *encoder, chat ? *chat_family : ChatFamily::chatml, context_length,
                   config.server.kv_budget);
    for (const auto& [token, bias] : request.sampling.logit_bias)
      if (token >= tokenizer->n_tokens())
        throw RequestError(400, "logit_bias",
                           "'logit_bias': token " + std::to_string(token) +
                               " is outside the vocabulary of " +
                               std::to_string(tokenizer->n_tokens()) + " tokens");
    engines.config_for(request.speculative);  // a refused allow_lossy: 400 now
  } catch (const RequestError& error) {
    const RequestError e = llama ? in_llama_names(error) : error;
    send_error(res, e.status, e.what(), e.param, e.code);
    return;
  } catch (const batching::Refusal& e) {
    const RequestError error = request_error(e, chat);
    send_error(res, error.status, error.what(), error.param, error.code);
    return;
  }
  ResponseInfo info;
  info.chat = chat;
  info.model = model_id;
  info.created = unix_now();
  info.id = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(info.created) + "-" +
            std::to_string(next_id++);
  info.per_prompt = static_cast<size_t>(request.n);
  info.running_usage = request.stream && request.continuous_usage;
  CompletionFormat format;
  format.info = info;
  format.stream = request.stream;
  format.include_usage = request.include_usage;
  format.logprobs = request.logprobs >= 0;
  format.family = chat ? *chat_family : ChatFamily::chatml;
  format.tools = chat && request.tools.active();
  format.forced_calls = chat && request.tools.forced();
  format.functions = request.tools.tools;
  format.opened_call = request.opened_call;
  format.tokenizer = tokenizer.get();
  for (const PreparedPrompt& p : request.prepared) format.echo.push_back(p.echo);
  format.llama = llama;
  format.return_tokens = llama_request.return_tokens;

  // n choices for each prompt: one job each, their events into one queue. Choice i answers
  // prompt i / n and draws from its own generator (the request's seed, or [engine] seed,
  // for a prompt's first choice; a seed derived from it for the others, the same whichever
  // place the prompt has in a batch); with the prefix cache a prompt's other choices wait
  // for its first one's prefill to share its blocks.
  const size_t per_prompt = static_cast<size_t>(request.n);
  const size_t n = request.choices();
  auto events = std::make_shared<CountedEvents>(metrics, n, per_prompt);
  std::vector<std::shared_ptr<Job>> jobs(n);
  const uint64_t seed = request.seed ? *request.seed : config.engine.seed;
  for (size_t i = 0; i < n; ++i) {
    jobs[i] = std::make_shared<Job>();
    Job& job = *jobs[i];
    const size_t first = i - i % per_prompt;
    job.request = request.generation(i / per_prompt);
    job.request.seed = choice_seed(seed, i - first);  // as if its prompt came alone
    if (i > first && config.server.prefix_cache) job.wait_for_prefill = jobs[first];
    job.events = events;
    job.choice = i;
    track(jobs[i]);
  }
  auto answer = std::make_shared<CompletionStream>(std::move(format), jobs);
  auto cancel_all_choices = [jobs] {
    for (const auto& j : jobs) j->cancelled = true;
  };
  // The client's connection, watched while the request waits so that a client that
  // hangs up cancels its sequences.
  const int connection = req.socket;
  // Takes the events that came (waiting up to 100 ms for one) into the answer, and looks
  // at the connection every 100 ms, events or not.
  auto last_look = std::make_shared<std::chrono::steady_clock::time_point>();
  auto pump = [events, answer, jobs, connection, cancel_all_choices, last_look] {
    constexpr std::chrono::milliseconds kLookEvery{100};
    std::vector<batching::RequestEvent> got;
    events->take(got, kLookEvery);
    for (const batching::RequestEvent& e : got) answer->add(e);
    const auto now = std::chrono::steady_clock::now();
    if (now - *last_look < kLookEvery) return;
    *last_look = now;
    if (!jobs[0]->cancelled && peer_closed(connection)) cancel_all_choices();
  };

  for (size_t i = 0; i < n; ++i) {
    if (scheduler.submit(jobs[i])) continue;
    cancel_all_choices();  // those submitted end at their first step
    send_error(res, 503,
               "the server is busy: " + std::to_string(config.server.queue_limit) +
                   " requests are already waiting (queue_limit" +
                   (n > 1 ? ", each of n choices counting as one" : "") + "); retry later",
               "", "queue_full");
    return;
  }
  while (!answer->settled()) pump();
  if (const std::optional<RequestError>& e = answer->refusal()) {
    cancel_all_choices();
    send_error(res, e->status, e->what(), e->param, e->code);
    return;
  }
  if (!request.stream) {
    while (!answer->ended()) pump();
    if (const std::optional<RequestError>& e = answer->error()) {
      send_error(res, e->status, e->what(), e->param, e->code);
      return;
    }
    res.set_content(answer->body(), "application/json");
    return;
  }
  res.headers.emplace_back("Cache-Control", "no-cache");
  res.content_type = "text/event-stream";
  res.stream = [answer, pump, guard, cancel_all_choices](const ChunkWriter& write) {
    for (;;) {
      std::deque<std::string> out = answer->take_events();
      while (out.empty() && !answer->ended()) {
        pump();
        out = answer->take_events();
      }
      for (const std::string& e : out)
        if (!write(e)) {
          cancel_all_choices();  // the client went away: end its generations
          return;
        }
      // Every choice's last event was in `out`: nothing follows the end.
      if (answer->ended()) return;
    }
  };
}

}  // namespace specd::server
