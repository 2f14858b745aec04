// HttpServer's state and routes (HttpServer::Impl), shared by http_server.cpp (loading,
// probes, routing, the server's life) and completion_route.cpp (the completion routes).
// Private to core/server.
#pragma once

#include "server/http_server.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "batching/scheduler.hpp"
#include "batching/shared_engine.hpp"
#include "server/chat_template.hpp"
#include "server/http_listener.hpp"
#include "server/kv_events.hpp"
#include "server/metrics.hpp"
#include "server/prompt.hpp"
#include "server/responses.hpp"
#include "server/verify_endpoint.hpp"

namespace specd::server {

using batching::Job;
using batching::Scheduler;
using batching::SharedEngine;

inline void send_error(HttpResponse& res, int status, const std::string& message,
                       const std::string& param = "", const std::string& code = "") {
  res.status = status;
  res.set_content(error_json(message, error_type(status), param, code), "application/json");
}

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

  Impl(const Config& c, const PluginRegistry& registry);

  void load();

  // One short greedy generation through the configured strategy, as a request runs: a model,
  // head or plugin that loads but cannot generate (NaN weights, a failure at its first call)
  // fails the load, naming why, rather than answering /health with 200 while every request
  // gets 500. Four tokens after the vocabulary's first token: the target's passes, and a
  // drafted round where the proposer drafts that early (k = "auto" keeps a first round plain;
  // a lookup proposer finds nothing in one token).
  void self_test();

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

  void resolve_chat_template();

  // Whether the request carries the configured API key (or none is configured).
  bool authorized(const HttpRequest& req) const;

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

  void routes();

  // Answers a whole request on a handler thread.
  void route(const HttpRequest& req, HttpResponse& res);

  // With KV events on: the prefix index's chain hashes now, for a subscriber to check the
  // index it rebuilt from the events against (sorted; taken between two steps), and how many
  // batches carry the events that built it.
  void kv_event_blocks(HttpResponse& res);

  nlohmann::json model_json() const {
    return {{"id", model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "specd"}};
  }
  // `llama`: llama-server's /completion (llama_completion.hpp), else OpenAI's routes
  // (completion_route.cpp).
  void complete(const HttpRequest& req, HttpResponse& res, bool chat, bool llama = false);
};

}  // namespace specd::server
