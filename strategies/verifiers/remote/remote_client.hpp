// The remote verifier's HTTP side: one session on a `specd serve` instance's
// POST /v1/verify (protocol: docs/VERIFIERS.md). Every failure is a RemoteError whose
// message names the URL: connection refused, a timeout (with the configured seconds), an
// HTTP status with the server's own message, a malformed answer.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace remote {

struct RemoteError : std::runtime_error {
  explicit RemoteError(const std::string& message, std::string error_code = "")
      : std::runtime_error(message), code(std::move(error_code)) {}
  std::string code;  // the server's error code ("unknown_session", ...), "" when none
};

struct ClientOptions {
  std::string url;      // "http://host:port" (an optional path prefix is kept)
  std::string api_key;  // sent as "Authorization: Bearer <key>" when not empty
  double connect_timeout_s = 5;
  double timeout_s = 60;  // reading or writing one request
};

// What the server said when the session was opened.
struct SessionInfo {
  std::string id;
  uint32_t vocab_size = 0, n_tokens = 0, context_length = 0, max_nodes = 0;
  uint64_t vocab_digest = 0;
};

// One verify request: see docs/VERIFIERS.md.
struct VerifyCall {
  bool reset = false;
  std::vector<int32_t> delta;   // committed tokens since the last call (the prompt on reset)
  std::vector<int32_t> commit;  // accepted node ids of the last tree (not sent on reset)
  int32_t root = 0;
  const int32_t* tokens = nullptr;  // the tree, n nodes
  const int32_t* parents = nullptr;
  uint32_t n_nodes = 0;
};

class Client {
 public:
  explicit Client(const ClientOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  SessionInfo open();
  // Writes (n_nodes + 1) × vocab_size logits; returns the server's compute seconds.
  double verify(const std::string& session, const VerifyCall& call, uint32_t vocab_size,
                float* logits);
  // Best effort (errors are ignored): the server frees idle sessions anyway.
  void close(const std::string& session) noexcept;
  // "http://host:port/v1/verify", for messages.
  const std::string& endpoint() const { return endpoint_; }

 private:
  std::string post(const std::string& request);

  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string endpoint_;
};

}  // namespace remote
