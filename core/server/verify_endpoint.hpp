// POST /v1/verify: a drafting machine's rounds verified on this server's target model
// (the `remote` verifier plugin is its client; protocol in docs/VERIFIERS.md).
//
//   {"op": "open"}  → {"session", "vocab_size", "n_tokens", "vocab_digest", "context_length",
//                      "max_nodes", "model"}
//   {"op": "verify", "session", "reset"?, "delta", "commit"?, "root",
//    "tree": {"tokens", "parents"}}
//                   → {"session", "committed", "rows", "vocab_size", "encoding": "f32le-base64",
//                      "logits", "compute_s"}
//   {"op": "close", "session"} → {"closed": true|false}
//
// Every malformed field is a 400 naming it; the model work runs on the scheduler's worker
// through run_exclusive, one request at a time, between generation jobs.
#pragma once

#include <atomic>
#include <memory>

#include "config/config.hpp"
#include "server/http_message.hpp"

namespace specd::batching {
class SharedEngine;
class Scheduler;
}  // namespace specd::batching

namespace specd::server {

class VerifyEndpoint {
 public:
  VerifyEndpoint(const Config& config, batching::SharedEngine& engines,
                 batching::Scheduler& scheduler, const std::atomic<bool>& draining);
  ~VerifyEndpoint();
  // Answers one POST /v1/verify (on a handler thread; the model work waits for the worker).
  void handle(const HttpRequest& req, HttpResponse& res);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace specd::server
