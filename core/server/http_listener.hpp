// specd serve's HTTP/1.1 connections (Boost.Beast over Boost.Asio): reading requests under
// one deadline each, answering them in order on each connection (pipelined requests
// included), streaming answers in chunks, and closing what must be closed.
//
// Reading and writing run on a few I/O threads; route handlers, which may block for a whole
// generation, run on a pool of handler threads of their own, so that no number of slow or
// idle connections can occupy a handler.
//
//   - A request must arrive whole (head and body) within request_timeout_s of the
//     connection's accept or of its previous answer; otherwise the connection is closed.
//   - Before the body is read: the head's framing (body_framing.hpp: Content-Length with
//     Transfer-Encoding 400, chunked 411, a bad length 400, a length over max_body_bytes 413),
//     then the `before_body` handler (API key, readiness). A request answered from its head
//     ends its connection (its body is never read): the answer goes out, then a lingering
//     close (the client's further bytes are drained for at most 1 s or 1 MiB).
//   - A head over 64 KiB: 431; a malformed request: 400 naming what the parser saw; both end
//     the connection.
//   - Each connection of an address that waits for a request counts against
//     max_waiting_per_client (waiting_connections.hpp); past max_connections in all, a new
//     connection is answered 503 and closed; at most handler_threads requests with a body
//     are read or handled at once (each buffers up to max_body_bytes), the others waiting
//     their turn.
//   - HTTP/1.0 clients get streams unchunked, ended by the connection's end; HEAD requests
//     get heads without bodies.
//   - Each write must finish within write_timeout_s (a client that stops reading a stream
//     loses its connection, and the stream sees a failed write).
//
// Thread rules: bind(), then serve() on one thread (it returns after stop()); stop() from
// any other thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "server/http_message.hpp"

namespace specd::server {

struct HttpListenerSettings {
  size_t handler_threads = 8;
  uint64_t max_body_bytes = 1 << 20;
  double request_timeout_s = 10;
  int max_waiting_per_client = 32;  // 0: no cap
  // Connections held at once; one more is answered 503 and closed (bounds the memory that
  // request heads take, 64 KiB each at most). Kept 128 below the process's descriptor limit,
  // whose soft value the listener raises to the hard one.
  size_t max_connections = 1024;
  double write_timeout_s = 30;
};

struct HttpHandlers {
  // The request's head (its body not yet read, `body` empty): true when it answered in
  // `res`, and the body is then never read. Runs on an I/O thread: must not block.
  std::function<bool(const HttpRequest&, HttpResponse&)> before_body;
  // The whole request: fills `res`. Runs on a handler thread; may block. An exception that
  // leaves it is answered 500 with its message.
  std::function<void(const HttpRequest&, HttpResponse&)> handle;
  // Formats an answer the listener makes itself (a refused framing, a malformed request, an
  // exception from `handle`) into `res`, and counts it. `request` holds what was read of
  // the head (its path may be empty). Must not block.
  std::function<void(const HttpRequest& request, int status, const std::string& message,
                     const std::string& code, HttpResponse& res)>
      refuse;
};

class HttpListener {
 public:
  HttpListener(HttpListenerSettings settings, HttpHandlers handlers);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Listens on host:port (0: any free port) with the kernel's deepest accept queue; returns
  // the bound port. Throws std::system_error with the socket call's error.
  int bind(const std::string& host, int port);
  // Accepts and answers until stop(); returns once every handler has returned and its
  // answer has been written.
  void serve();
  // Stops accepting, closes the connections that wait for a request, lets the handlers
  // running finish and write their answers (a handler still queued runs too), then ends
  // serve(). Blocks until the handlers are done.
  void stop();

  struct Impl;  // the connections' shared state (http_listener.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace specd::server
