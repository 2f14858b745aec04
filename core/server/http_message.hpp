// One HTTP request as a route handler sees it, and the answer it leaves: the server's routes
// are written against these, not against the HTTP library (http_listener.hpp reads and
// writes the wire).
//
// Thread rules: a request and its response belong to the handler thread that runs the route;
// a stream's callback runs on that same thread after the handler has returned.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace specd::server {

struct HttpRequest {
  std::string method;                                        // "GET", "POST", ...
  std::string path;                                          // the target without its query
  std::vector<std::pair<std::string, std::string>> headers;  // in the order sent
  std::string body;                                          // whole (no body: "")
  // The connection's socket while the handler runs, for peer_closed() (peer_socket.hpp);
  // -1 when there is none (tests).
  int socket = -1;

  // The first value of header `name` (case-insensitive), or "".
  std::string header(std::string_view name) const;
};

// Writes one piece of a streamed answer; false once the client is gone (the stream should
// then stop and cancel its work).
using ChunkWriter = std::function<bool(std::string_view)>;

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  // End the connection after this answer (the request's body was left unread, say).
  bool close = false;
  // Set for a streamed answer (chunked transfer coding): called once after the handler
  // returns, it writes the pieces as they come and returns when the answer is complete or a
  // write failed; `body` is then not sent.
  std::function<void(const ChunkWriter&)> stream;

  void set_content(std::string text, std::string type) {
    body = std::move(text);
    content_type = std::move(type);
  }
};

}  // namespace specd::server
