// specd serve's HTTP front end: the OpenAI-compatible routes over the scheduler.
//
//   POST /v1/completions, POST /v1/chat/completions (JSON, or SSE with "stream": true)
//   GET /v1/models, GET /health, GET /metrics (Prometheus text)
//
// The port can open before the model is loaded (bind, serve, then load() on another thread):
// until load() has returned, GET /health and the completion and verify routes answer 503
// "the model is loading" (code "model_loading"); /v1/models and /metrics answer as usual.
//
// Threads: the HTTP library's pool runs the handlers; generation runs on the scheduler's
// worker. load(), abandon_load(), ready() and stop() may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "config/config.hpp"
#include "plugin/registry.hpp"

namespace specd::server {

class HttpServer {
 public:
  // Resolves the chat template (its configuration errors surface before listening); the
  // model is loaded by load(). Throws UsageError.
  HttpServer(const Config& config, const PluginRegistry& registry);
  ~HttpServer();

  // Binds [server] host and `port` (0 = any free port); returns the bound port.
  int bind(const std::string& host, int port);
  // Loads the configured engine (target, tokenizer, the configured proposer and rule) on the
  // scheduler's worker; the server is ready when it returns. Throws UsageError / Error like
  // the engine; the server then stays unready (503) until stopped. Call once.
  void load();
  // After load(): the target's KV cache type, bytes a token and what the budget holds.
  std::string kv_summary() const;
  bool ready() const;
  // Gives up a load still running, so that a signal during a long load (a large model, the
  // step plan's timed passes) need not wait for it: true when the server was not ready, and
  // now never will be (the model routes go on answering 503, so no request was or will be
  // admitted: the caller may end the process at once); false once load() has made it ready
  // or failed. load() itself runs on until it returns.
  bool abandon_load();
  // Serves until stop(); returns after the requests in flight have been answered.
  void serve();
  // Drains: new requests get 503; requests in flight finish, or after [server]
  // drain_timeout_s are cancelled (ending with what they have); then the listener closes.
  // Returns the number of requests cancelled at the deadline. Blocks while draining.
  int stop();

  // A line for the log about the chat template ("chatml from tokenizer.chat_template", ...).
  std::string chat_template_note() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace specd::server
