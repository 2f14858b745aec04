#include "server/http_server_impl.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include <strings.h>

#include "common/error.hpp"
#include "gguf/gguf_reader.hpp"
#include "models/llama_model.hpp"
#include "server/client_redaction.hpp"
#include "server/server_checks.hpp"
#include "server/token_routes.hpp"
#include "tokenizer/unicode.hpp"

namespace specd::server {
namespace {

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

}  // namespace

bool HttpServer::Impl::authorized(const HttpRequest& req) const {
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

HttpServer::Impl::Impl(const Config& c, const PluginRegistry& registry)
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

void HttpServer::Impl::load() {
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
      if (const KvPool* w = pool.window()) {
        std::snprintf(line, sizeof line,
                      "; sliding-window layers apart: %llu bytes a token, for the last %d rows "
                      "of each sequence and its cached prefix",
                      static_cast<unsigned long long>(w->bytes_per_token()),
                      pool.window_keys() + KvCache::kWindowSlack);
        kv_summary += line;
      }
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

void HttpServer::Impl::self_test() {
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

void HttpServer::Impl::resolve_chat_template() {
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
    chat_refusal = config.target.model + ": its tokenizer.chat_template matches no known family (" +
                   chat_family_names() + "); set [server] chat_template to one of them";
    chat_note = "none (" + chat_refusal + ")";
    return;
  }
  chat_note = chat_family_name(*chat_family) + " recognised in " + config.target.model +
              " tokenizer.chat_template";
}

void HttpServer::Impl::routes() {
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
                             path == "/v1/verify" || path == "/tokenize" || path == "/detokenize" ||
                             path == "/completion" || path == "/completions";
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

void HttpServer::Impl::route(const HttpRequest& req, HttpResponse& res) {
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

void HttpServer::Impl::kv_event_blocks(HttpResponse& res) {
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
