#include "server/http_server.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>
#include <thread>

#include <strings.h>

#include <cerrno>
#include <cstdio>

#include "batching/scheduler.hpp"
#include "batching/shared_engine.hpp"
#include "common/error.hpp"
#include "common/memory_release.hpp"
#include "gguf/gguf_reader.hpp"
#include "models/llama_model.hpp"
#include "server/chat_template.hpp"
#include "server/client_redaction.hpp"
#include "server/completion_stream.hpp"
#include "server/http_listener.hpp"
#include "server/kv_events.hpp"
#include "server/llama_completion.hpp"
#include "server/metrics.hpp"
#include "server/peer_socket.hpp"
#include "server/prompt.hpp"
#include "server/request.hpp"
#include "server/responses.hpp"
#include "server/server_checks.hpp"
#include "server/token_routes.hpp"
#include "server/tool_calls.hpp"
#include "server/verify_endpoint.hpp"
#include "tokenizer/unicode.hpp"

namespace specd::server {

using batching::Job;
using batching::Scheduler;
using batching::SharedEngine;

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

void send_error(HttpResponse& res, int status, const std::string& message,
                const std::string& param = "", const std::string& code = "") {
  res.status = status;
  res.set_content(error_json(message, error_type(status), param, code), "application/json");
}

// The metrics label of a path: the routes by name, anything else as "other" (so that
// arbitrary paths cannot grow the label set).
std::string endpoint_label(const std::string& path) {
  for (const char* route : {"/health", "/livez", "/readyz", "/metrics", "/kv_events/blocks",
                            "/v1/models", "/v1/completions", "/v1/chat/completions", "/v1/verify",
                            "/tokenize", "/detokenize", "/completion", "/completions"})
    if (path == route) return path;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models";
  return "other";
}

bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % (b.empty() ? 1 : b.size())];
  return diff == 0;
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

// Where the server is in its life: the model loads while the port is open already.
enum class LoadState { loading, ready, failed, abandoned };

struct HttpServer::Impl {
  Config config;
  std::string model_id;
  std::optional<ChatFamily> chat_family;
  std::string chat_note;     // where the template came from, or why there is none
  std::string chat_refusal;  // the 400 message for chat requests when there is none
  Metrics metrics;
  // [server] kv_events_endpoint: publishes the target pool's prefix index (kv_events.hpp).
  // Declared before the engines so that it outlives the pool that tells it.
  std::unique_ptr<KvEventPublisher> kv_events;
  SharedEngine engines;
  Scheduler scheduler;
  std::unique_ptr<HttpListener> http;  // the connections (made by routes())
  std::atomic<bool> draining{false};
  // Set (release) once tokenizer, encoder and context_length below are; handlers that use
  // them, or the engine, read it first (acquire) and answer 503 until it is `ready`.
  std::atomic<LoadState> state{LoadState::loading};
  std::atomic<int> in_flight{0};  // completion requests not yet fully answered
  std::atomic<uint64_t> next_id{1};
  // The target's tokenizer (a copy: the cache may drop the engine it came from), for the
  // prompt tokens and the room left in the context, computed before a request is queued.
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<PromptEncoder> encoder;
  uint32_t context_length = 0;
  std::string kv_summary;  // set by load()
  // The jobs of requests not yet answered, for cancelling them at the drain deadline.
  std::mutex live_mutex;
  std::vector<std::weak_ptr<Job>> live;
  VerifyEndpoint verify{config, engines, scheduler, draining};  // POST /v1/verify

  Impl(const Config& c, const PluginRegistry& registry)
      : config(c), engines(config, registry), scheduler(engines, config.server.queue_limit) {
    hide_from_clients(config, registry.search_path());
    // A file name need not be UTF-8; the id is JSON text, so invalid bytes become U+FFFD
    // (and a request naming the model sends it back that way).
    model_id = valid_utf8(config.server.model_name.empty()
                              ? std::filesystem::path(config.target.model).stem().string()
                              : config.server.model_name);
    resolve_chat_template();
    if (!config.server.kv_events_endpoint.empty()) {
      KvEventsSettings events;
      events.endpoint = config.server.kv_events_endpoint;
      events.replay_endpoint = config.server.kv_events_replay_endpoint;
      events.topic = config.server.kv_events_topic;
      try {
        kv_events = std::make_unique<KvEventPublisher>(events);
      } catch (const Error& e) {
        throw Error(config.where("server.kv_events_endpoint") + ": " + e.what());
      }
    }
    routes();
  }

  void load() {
    try {
      // On the worker, which owns the engines; the configured strategy is built too, so
      // that a bad [proposer] or [acceptance] fails the load rather than the first request.
      scheduler.run_exclusive([this] {
        Engine& engine = engines.get(batching::StrategyChoice{});
        tokenizer = std::make_unique<Tokenizer>(engine.tokenizer());
        encoder = std::make_unique<PromptEncoder>(*tokenizer);
        context_length = engine.context_length();
        // What the KV budget buys: the operator's first question about memory.
        const KvPool& pool = engines.target().kv_pool();
        const uint64_t tokens = scheduler.kv_budget().budget();
        const uint64_t bytes = tokens * pool.bytes_per_token();
        char line[256];
        std::snprintf(
            line, sizeof line,
            "KV cache: %s, %llu bytes a token; budget %llu tokens (%.2f GiB), %llu "
            "sequences at the full context of %u",
            dtype_name(pool.dtype()), static_cast<unsigned long long>(pool.bytes_per_token()),
            static_cast<unsigned long long>(tokens), double(bytes) / (1ull << 30),
            static_cast<unsigned long long>(tokens / std::max(1u, context_length)), context_length);
        kv_summary = line;
        if (kv_events) {
          KvPool& target_pool = engines.target().kv_pool();
          kv_events->set_block_size(static_cast<uint32_t>(target_pool.block_rows()));
          target_pool.set_prefix_listener(kv_events.get());
        }
        scheduler.prepare_step_plan();
      });
      self_test();
    } catch (...) {
      LoadState expected = LoadState::loading;
      state.compare_exchange_strong(expected, LoadState::failed);
      throw;
    }
    LoadState expected = LoadState::loading;  // not ready if abandon_load() came first
    state.compare_exchange_strong(expected, LoadState::ready);
  }

  // One short greedy generation through the configured strategy, as a request runs: a model,
  // head or plugin that loads but cannot generate (NaN weights, a failure at its first call)
  // fails the load, naming why, rather than answering /health with 200 while every request
  // gets 500. Four tokens after the vocabulary's first token: the target's passes, and a
  // drafted round where the proposer drafts that early (k = "auto" keeps a first round plain;
  // a lookup proposer finds nothing in one token).
  void self_test() {
    auto job = std::make_shared<Job>();
    job->request.prompt = {tokenizer->bos_id() >= 0 ? tokenizer->bos_id() : 0};
    job->request.max_tokens = 4;
    job->request.sampling = config.sampling;
    job->request.sampling.temperature = 0;
    job->request.sampling.ignore_eos = true;
    job->request.sampling.grammar.clear();
    job->request.sampling.min_tokens = 0;
    auto events = std::make_shared<batching::EventQueue>();
    job->events = events;
    if (!scheduler.submit(job, false)) throw Error("the server stopped while loading");
    std::vector<batching::RequestEvent> got;
    for (;;) {
      got.clear();
      events->take(got, std::chrono::milliseconds(1000));
      // A signal while it runs: it ends at its next round.
      if (state.load() == LoadState::abandoned) job->cancelled = true;
      for (const batching::RequestEvent& e : got) {
        if (e.kind == batching::RequestEvent::Kind::done) return;
        if (e.refusal)
          throw Error("the model loaded but its first generation failed: " +
                      std::string(e.refusal->what()));
      }
    }
  }

  // Why a new request would not be taken now ("" when it would): loading, failed, draining,
  // kv_full (no KV block free or evictable). A full queue is left to the gateway (it reads
  // vllm:num_requests_waiting, and a 503 queue_full is retried), so that readiness does not
  // flap with the load.
  std::string unready_reason() const {
    const LoadState s = state.load();
    if (s == LoadState::loading) return "loading";
    if (s == LoadState::failed) return "failed";
    if (draining || s == LoadState::abandoned) return "draining";
    const StepTotals kv = scheduler.steps();
    if (kv.kv_blocks > 0 && kv.kv_blocks_free == 0) return "kv_full";
    return "";
  }

  // The 503 for a request that needs the model before it is loaded; false when it is.
  bool refuse_unready(HttpResponse& res) {
    const LoadState s = state.load();
    if (s == LoadState::ready) return false;
    if (s == LoadState::loading)
      send_error(res, 503, "the model is loading", "", "model_loading");
    else if (s == LoadState::abandoned)
      send_error(res, 503, "the server is shutting down", "", "shutting_down");
    else
      send_error(res, 503, "the model failed to load (see the server's log)", "",
                 "model_load_failed");
    return true;
  }

  void resolve_chat_template() {
    const ServerConfig& s = config.server;
    if (!s.chat_template.empty() || !s.chat_template_file.empty()) {
      chat_family = configured_chat_family(config);
      chat_note = chat_family_name(*chat_family) +
                  (s.chat_template.empty() ? " recognised in " + s.chat_template_file
                                           : std::string(" from [server] chat_template"));
      return;
    }
    GgufFile target = GgufFile::open(config.target.model);
    std::optional<std::string> t = target.get_string_opt("tokenizer.chat_template");
    if (!t) {
      chat_refusal = config.target.model +
                     " has no tokenizer.chat_template; set [server] chat_template (" +
                     chat_family_names() + ") or chat_template_file to serve chat";
      chat_note = "none (" + chat_refusal + ")";
      return;
    }
    chat_family = detect_chat_family(*t);
    if (!chat_family) {
      chat_refusal = config.target.model +
                     ": its tokenizer.chat_template matches no known family (" +
                     chat_family_names() + "); set [server] chat_template to one of them";
      chat_note = "none (" + chat_refusal + ")";
      return;
    }
    chat_note = chat_family_name(*chat_family) + " recognised in " + config.target.model +
                " tokenizer.chat_template";
  }

  bool authorized(const HttpRequest& req) const {
    const std::string& key = config.server.api_key;
    if (key.empty()) return true;
    // "Bearer" is an auth scheme, and schemes are case-insensitive (RFC 9110 section 11.1).
    std::string given = req.header("Authorization");
    if (given.size() > 7 && given[6] == ' ') {
      const std::string scheme = given.substr(0, 6);
      if (strcasecmp(scheme.c_str(), "bearer") == 0) given.replace(0, 6, "Bearer");
    }
    return same_secret(given, "Bearer " + key);
  }

  void track(const std::shared_ptr<Job>& job) {
    std::lock_guard<std::mutex> lock(live_mutex);
    live.erase(std::remove_if(live.begin(), live.end(),
                              [](const std::weak_ptr<Job>& j) { return j.expired(); }),
               live.end());
    live.push_back(job);
  }

  // Sets every unanswered job's cancel flag; returns how many there were.
  int cancel_all() {
    std::lock_guard<std::mutex> lock(live_mutex);
    int n = 0;
    for (const std::weak_ptr<Job>& weak : live)
      if (std::shared_ptr<Job> job = weak.lock()) {
        job->shut_down = true;
        job->cancelled = true;
        ++n;
      }
    return n;
  }

  void routes() {
    HttpListenerSettings settings;
    // Each request holds a handler thread while it waits or runs: enough for the queue, the
    // sequences running and a few health or metrics probes, so that queue_limit (not the
    // pool) decides 503s. The configuration bounds queue_limit, and so the pool.
    settings.handler_threads =
        size_t(config.server.queue_limit) + size_t(config.server.max_sequences) + 4;
    settings.max_body_bytes = config.server.max_body_bytes;
    settings.request_timeout_s = config.server.request_timeout_s;
    settings.max_waiting_per_client = config.server.max_waiting_per_client;
    HttpHandlers handlers;
    // From the head, before the body is read (the listener has checked its framing).
    handlers.before_body = [this](const HttpRequest& req, HttpResponse& res) {
      const std::string& path = req.path;
      // Probes are answered here, on the I/O thread, never behind handlers that are busy
      // (they block on nothing).
      if (req.method == "GET" && (path == "/health" || path == "/livez" || path == "/readyz")) {
        route(req, res);
        metrics.request(path, res.status);
        return true;
      }
      if (path != "/health" && path != "/livez" && path != "/readyz" && !authorized(req)) {
        send_error(res, 401, "missing or wrong API key (send Authorization: Bearer <key>)", "",
                   "invalid_api_key");
        metrics.request(endpoint_label(path), 401);
        return true;
      }
      const bool needs_model = path == "/v1/completions" || path == "/v1/chat/completions" ||
                               path == "/v1/verify" || path == "/tokenize" ||
                               path == "/detokenize" || path == "/completion" ||
                               path == "/completions";
      if (needs_model && !draining && refuse_unready(res)) {
        metrics.request(endpoint_label(path), 503);
        return true;
      }
      return false;
    };
    handlers.handle = [this](const HttpRequest& req, HttpResponse& res) {
      route(req, res);
      metrics.request(endpoint_label(req.path), res.status);
    };
    handlers.refuse = [this](const HttpRequest& req, int status, const std::string& message,
                             const std::string& code, HttpResponse& res) {
      send_error(res, status, message, "", code);
      metrics.request(endpoint_label(req.path), status);
    };
    http = std::make_unique<HttpListener>(settings, std::move(handlers));
  }

  // Answers a whole request on a handler thread.
  void route(const HttpRequest& req, HttpResponse& res) {
    const std::string& path = req.path;
    const bool get = req.method == "GET";
    const bool post = req.method == "POST";
    if (get && path == "/health") {
      if (draining) {
        res.status = 503;
        res.set_content("{\"status\":\"draining\"}", "application/json");
      } else if (!refuse_unready(res)) {
        res.set_content("{\"status\":\"ok\"}", "application/json");
      }
    } else if (get && path == "/livez") {
      // Kubernetes' probes: liveness answers while the process serves HTTP at all (loading
      // and draining included, so that neither restarts the pod); readiness says whether a
      // new request would be taken now, and fails first on SIGTERM.
      res.set_content("{\"status\":\"alive\"}", "application/json");
    } else if (get && path == "/readyz") {
      const std::string why = unready_reason();
      res.status = why.empty() ? 200 : 503;
      res.set_content("{\"status\":\"" + (why.empty() ? std::string("ready") : why) + "\"}",
                      "application/json");
    } else if (get && path == "/metrics") {
      res.set_content(
          metrics.render(scheduler.queued(), scheduler.running(), scheduler.steps(), model_id),
          "text/plain; version=0.0.4");
    } else if (get && path == "/kv_events/blocks") {
      kv_event_blocks(res);
    } else if (get && path == "/v1/models") {
      nlohmann::json body = {{"object", "list"}, {"data", nlohmann::json::array({model_json()})}};
      res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                      "application/json");
    } else if (get && path.rfind("/v1/models/", 0) == 0 && path.size() > 11) {
      // The openai client's models.retrieve(id).
      const std::string id = path.substr(11);
      if (id == model_id)
        res.set_content(model_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                        "application/json");
      else
        send_error(res, 404, "this server serves '" + model_id + "', not '" + valid_utf8(id) + "'",
                   "model", "model_not_found");
    } else if (post && (path == "/tokenize" || path == "/detokenize")) {
      // The head's check lets every request through while draining: the tokenizer may
      // still be loading.
      if (!refuse_unready(res)) {
        try {
          res.set_content(path == "/tokenize" ? tokenize_json(*tokenizer, req.body)
                                              : detokenize_json(*tokenizer, req.body),
                          "application/json");
        } catch (const RequestError& e) {
          send_error(res, e.status, e.what(), e.param, e.code);
        }
      }
    } else if (post && (path == "/v1/completions" || path == "/v1/chat/completions")) {
      complete(req, res, path == "/v1/chat/completions");
    } else if (post && (path == "/completion" || path == "/completions")) {
      complete(req, res, false, true);  // llama-server's own route (and its alias)
    } else if (post && path == "/v1/verify") {
      verify.handle(req, res);
    } else {
      send_error(res, 404, "no route for " + req.method + " " + valid_utf8(path), "", "not_found");
    }
  }

  // With KV events on: the prefix index's chain hashes now, for a subscriber to check the
  // index it rebuilt from the events against (sorted; taken between two steps), and how many
  // batches carry the events that built it.
  void kv_event_blocks(HttpResponse& res) {
    if (!kv_events) {
      send_error(res, 404, "KV events are off ([server] kv_events_endpoint)", "", "not_found");
      return;
    }
    if (refuse_unready(res)) return;
    std::vector<uint64_t> hashes;
    uint64_t batches = 0;
    scheduler.run_exclusive([&] {
      hashes = engines.target().kv_pool().published_hashes();
      batches = kv_events->batches_through_now();
    });
    std::sort(hashes.begin(), hashes.end());
    // "batches": the index equals what the events of batches 0 .. batches - 1 build.
    res.set_content(nlohmann::json({{"hashes", hashes}, {"batches", batches}}).dump(),
                    "application/json");
  }

  nlohmann::json model_json() const {
    return {{"id", model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "specd"}};
  }

  // `llama`: llama-server's /completion (llama_completion.hpp), else OpenAI's routes.
  void complete(const HttpRequest& req, HttpResponse& res, bool chat, bool llama = false) {
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
};

HttpServer::HttpServer(const Config& config, const PluginRegistry& registry)
    : impl_(std::make_unique<Impl>(config, registry)) {}

HttpServer::~HttpServer() {
  impl_->http->stop();
  impl_->scheduler.drain();
}

namespace {
// Why bind() failed, when the socket call's error says it without doubt; "" otherwise.
std::string bind_failure_reason(int err) {
  switch (err) {
    case EADDRINUSE:
      return " (address in use: another server on this port?)";
    case EACCES:
      return " (permission denied: ports below 1024 need privileges)";
    case EADDRNOTAVAIL:
      return " (not an address of this machine)";
    default:
      return "";
  }
}
}  // namespace

int HttpServer::bind(const std::string& host, int port) {
  try {
    return impl_->http->bind(host, port);
  } catch (const std::system_error& e) {
    const std::string reason = bind_failure_reason(e.code().value());
    throw Error(impl_->config.where(port ? "server.port" : "server.host") + ": cannot listen on " +
                host + ":" + std::to_string(port) +
                (reason.empty() ? ": " + std::string(e.what()) : reason));
  }
}

void HttpServer::load() {
  impl_->load();
}

std::string HttpServer::kv_summary() const {
  return impl_->kv_summary;
}

bool HttpServer::ready() const {
  return impl_->state == LoadState::ready;
}

bool HttpServer::abandon_load() {
  LoadState expected = LoadState::loading;
  return impl_->state.compare_exchange_strong(expected, LoadState::abandoned);
}

void HttpServer::serve() {
  impl_->http->serve();
  impl_->scheduler.drain();
}

int HttpServer::stop() {
  using Clock = std::chrono::steady_clock;
  impl_->draining = true;
  // Let the requests in flight finish first, up to [server] drain_timeout_s; then cancel
  // what is left (each sequence ends at its next round with what it has) and give those
  // answers a few seconds to go out.
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(impl_->config.server.drain_timeout_s));
  while (impl_->in_flight > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  int cancelled = 0;
  if (impl_->in_flight > 0) {
    cancelled = impl_->cancel_all();
    const auto grace = Clock::now() + std::chrono::seconds(5);
    while (impl_->in_flight > 0 && Clock::now() < grace)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  impl_->http->stop();
  return cancelled;
}

std::string HttpServer::chat_template_note() const {
  return impl_->chat_note;
}

}  // namespace specd::server
