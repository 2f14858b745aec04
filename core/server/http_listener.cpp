#include "server/http_listener.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <strings.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "server/body_framing.hpp"
#include "server/waiting_connections.hpp"

namespace specd::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr size_t kMaxHeadBytes = 64 * 1024;
constexpr size_t kLingerBytes = 1 << 20;
constexpr std::chrono::seconds kLinger{1};

std::chrono::steady_clock::duration after(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

// The target's path, its %XX escapes decoded (an invalid escape stays as sent), without the
// query.
std::string decoded_path(std::string_view target) {
  target = target.substr(0, target.find('?'));
  std::string path;
  path.reserve(target.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == '%' && i + 2 < target.size() && hex(target[i + 1]) >= 0 &&
        hex(target[i + 2]) >= 0) {
      path += static_cast<char>(hex(target[i + 1]) * 16 + hex(target[i + 2]));
      i += 2;
    } else {
      path += target[i];
    }
  }
  return path;
}

// The method and path of a request line ("POST /v1/completions?x HTTP/1.1"), for the answers
// made before the parser has read it.
void read_request_line(std::string_view head, HttpRequest& request) {
  const std::string_view line = head.substr(0, head.find("\r\n"));
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) return;
  request.method = std::string(line.substr(0, space));
  std::string_view target = line.substr(space + 1);
  target = target.substr(0, target.find(' '));
  request.path = decoded_path(target);
}

// Errors that end a connection without an answer: it closed, was cut, or timed out.
bool connection_ended(const beast::error_code& ec) {
  return ec == beast::error::timeout || ec == net::error::eof || ec == http::error::end_of_stream ||
         ec == net::error::operation_aborted || ec == net::error::connection_reset ||
         ec == net::error::bad_descriptor || ec == http::error::partial_message;
}

}  // namespace

class Session;

struct HttpListener::Impl {
  Impl(HttpListenerSettings s, HttpHandlers h)
      : settings(s),
        handlers(std::move(h)),
        waiting(s.max_waiting_per_client),
        workers(std::max<size_t>(1, s.handler_threads)) {
    // Each connection is a descriptor: the soft limit goes up to the hard one, as servers
    // do, and the cap stays below it, so that the cap (a 503), not a failing accept, meets
    // the surplus.
    rlimit files{};
    if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
      if (files.rlim_cur < files.rlim_max) {
        rlimit raised = files;
        raised.rlim_cur = files.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) files = raised;
      }
      if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur > 256)
        settings.max_connections = std::min<size_t>(settings.max_connections, files.rlim_cur - 128);
    }
  }
  void accept();
  void stop();
  // A slot to read a body in: true when taken now; otherwise `session` is queued and
  // resumed (resume_body) once a slot frees.
  bool take_body_slot(const std::shared_ptr<Session>& session);
  void give_body_slot();
  HttpListenerSettings settings;
  HttpHandlers handlers;
  // Declared before the I/O context: sessions that its queues hold unregister on destruction.
  std::mutex sessions_mutex;
  std::map<uint64_t, std::weak_ptr<Session>> sessions;
  uint64_t next_id = 1;
  WaitingConnections waiting;
  std::atomic<bool> stopping{false};
  std::atomic<size_t> connections{0};  // sessions alive
  // Bodies being read at once are bounded (each buffers up to max_body_bytes); the rest
  // wait their turn, their request deadline running.
  std::mutex body_mutex;
  size_t bodies_reading = 0;
  std::deque<std::shared_ptr<Session>> body_queue;  // waiting for a slot (held alive)
  net::io_context io;
  tcp::acceptor acceptor{net::make_strand(io)};
  net::steady_timer accept_pause{acceptor.get_executor()};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> keep_running{
      net::make_work_guard(io)};
  // Declared after the I/O context: a handler still queued here holds a session, whose
  // socket needs the context when it is destroyed.
  net::thread_pool workers;
  std::once_flag stopped;
};

// One connection: reads a request (on its strand), hands it to a handler thread, writes the
// answer from there, and reads the next.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpListener::Impl& owner, tcp::socket socket, uint64_t id)
      : owner_(owner), stream_(std::move(socket)), id_(id) {
    ++owner_.connections;
    beast::error_code ec;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    if (!ec) address_ = peer.address().to_string();
  }
  ~Session() {
    if (body_slot_) owner_.give_body_slot();
    owner_.waiting.done(id_);
    --owner_.connections;
    std::lock_guard<std::mutex> lock(owner_.sessions_mutex);
    owner_.sessions.erase(id_);
  }

  // `over_capacity`: the server holds max_connections already; this one is answered 503 and
  // closed.
  void start(bool over_capacity) {
    net::dispatch(stream_.get_executor(), [self = shared_from_this(), over_capacity] {
      if (!over_capacity) return self->wait_for_request();
      self->refuse(HttpRequest{}, 503,
                   "the server holds " + std::to_string(self->owner_.settings.max_connections) +
                       " connections already; retry later",
                   "too_many_connections");
    });
  }

  // Its turn to read a body (give_body_slot), on its strand.
  void resume_body() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      self->body_slot_ = true;
      self->read_body_now();
    });
  }

  // Closes the connection unless a handler has its request (a cut, or the server stopping).
  void close_if_waiting() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->in_handler_) self->shut();
    });
  }

 private:
  void wait_for_request() {
    in_handler_ = false;
    if (owner_.stopping) return shut();
    for (uint64_t cut : owner_.waiting.waiting(address_, id_)) {
      std::shared_ptr<Session> other;
      {
        std::lock_guard<std::mutex> lock(owner_.sessions_mutex);
        auto it = owner_.sessions.find(cut);
        if (it != owner_.sessions.end()) other = it->second.lock();
      }
      if (other) other->close_if_waiting();
    }
    stream_.expires_after(after(owner_.settings.request_timeout_s));
    read_head();
  }

  // Reads until the buffer holds a whole head (it may already: a pipelined request).
  void read_head() {
    const std::string_view have(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    const size_t end = have.find("\r\n\r\n");
    if (end != std::string_view::npos) return on_head(have.substr(0, end + 4));
    if (buffer_.size() >= kMaxHeadBytes) {
      HttpRequest head;
      read_request_line(have, head);
      return refuse(head, 431, "the request head is over 64 KiB", "request_header_too_large");
    }
    stream_.async_read_some(buffer_.prepare(std::min<size_t>(8192, kMaxHeadBytes - buffer_.size())),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) return self->shut();
                              self->buffer_.commit(n);
                              self->read_head();
                            });
  }

  void on_head(std::string_view head) {
    request_ = HttpRequest{};
    read_request_line(head, request_);
    // Framing first, from the raw head (body_framing.hpp), so that a conflict is refused
    // with its own message before any parser takes a side.
    if (auto refused = check_body_framing(scan_body_headers(head), owner_.settings.max_body_bytes))
      return refuse(request_, refused->status, refused->message, refused->code);
    parser_.emplace();
    parser_->header_limit(kMaxHeadBytes);
    parser_->body_limit(owner_.settings.max_body_bytes);
    beast::error_code ec;
    const size_t used = parser_->put(buffer_.data(), ec);
    if (ec || !parser_->is_header_done())
      return refuse(request_, 400, "malformed HTTP request: " + (ec ? ec.message() : "no head"),
                    "invalid_request");
    buffer_.consume(used);
    const auto& message = parser_->get();
    request_.method = std::string(message.method_string());
    const std::string_view target(message.target().data(), message.target().size());
    request_.path = decoded_path(target);
    for (const auto& field : message)
      request_.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    keep_alive_ = message.keep_alive();
    http11_ = message.version() >= 11;
    head_ = request_.method == "HEAD";
    HttpResponse early;
    if (owner_.handlers.before_body && owner_.handlers.before_body(request_, early)) {
      // Its body is never read: what follows the head is not a request.
      return answer(std::move(early), !parser_->is_done());
    }
    if (http11_ && !parser_->is_done() &&
        strcasecmp(request_.header("Expect").c_str(), "100-continue") == 0) {
      auto go_on = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      return net::async_write(stream_, net::buffer(*go_on),
                              [self = shared_from_this(), go_on](beast::error_code failed, size_t) {
                                if (failed) return self->shut();
                                self->read_body();
                              });
    }
    read_body();
  }
  void read_body() {
    if (parser_->is_done()) return on_request();             // no body
    if (!owner_.take_body_slot(shared_from_this())) return;  // resumed in its turn
    body_slot_ = true;
    read_body_now();
  }

  void read_body_now() {
    http::async_read(
        stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
          // The slot stays with a whole request until its handler returns: bodies buffered,
          // read or waiting for a handler, stay within the slots.
          if (ec) self->release_body_slot();
          if (ec == http::error::body_limit)
            return self->refuse(self->request_, 413,
                                "the request body exceeds the server's max_body_bytes of " +
                                    std::to_string(self->owner_.settings.max_body_bytes),
                                "request_too_large");
          if (ec && connection_ended(ec)) return self->shut();
          if (ec)
            return self->refuse(self->request_, 400, "malformed HTTP request: " + ec.message(),
                                "invalid_request");
          self->on_request();
        });
  }
  void release_body_slot() {
    if (!body_slot_) return;
    body_slot_ = false;
    owner_.give_body_slot();
  }

  void on_request() {
    owner_.waiting.done(id_);
    if (owner_.stopping) {  // the handler pool may be gone: no handler will take it
      release_body_slot();
      return refuse(request_, 503, "the server is shutting down", "shutting_down");
    }
    in_handler_ = true;
    stream_.expires_never();
    request_.body = std::move(parser_->get().body());
    parser_.reset();
    request_.socket = stream_.socket().native_handle();
    net::post(owner_.workers, [self = shared_from_this()] { self->run_handler(); });
  }

  // On a handler thread.
  void run_handler() {
    bool again = false;
    // Nothing may leave a pool thread: an exception there ends the process.
    try {
      HttpResponse res;
      try {
        owner_.handlers.handle(request_, res);
      } catch (const std::exception& e) {
        res = HttpResponse{};
        owner_.handlers.refuse(request_, 500, e.what(), "server_error", res);
      }
      // Decided before the head goes out, so that the answer never promises a connection
      // that is then closed.
      const bool keep = keep_alive_ && !res.close && !owner_.stopping;
      const bool written = res.stream ? write_stream(res, keep) : write_whole(res, keep);
      again = written && keep;
    } catch (...) {
      again = false;  // the answer may be cut: the connection ends
    }
    net::post(stream_.get_executor(), [self = shared_from_this(), again] {
      self->release_body_slot();
      if (again)
        self->wait_for_request();
      else
        self->shut();
    });
  }

  // Runs `start(done)` on the strand and waits for `done`: a handler thread writing.
  template <class Start>
  bool on_strand(Start&& start) {
    std::promise<beast::error_code> finished;
    std::future<beast::error_code> result = finished.get_future();
    net::post(stream_.get_executor(), [&] {
      stream_.expires_after(after(owner_.settings.write_timeout_s));
      start([&finished](beast::error_code ec, size_t) { finished.set_value(ec); });
    });
    return !result.get();
  }

  template <class Message>
  void head_fields(Message& message, const HttpResponse& res, bool keep_alive) {
    message.version(11);
    message.result(static_cast<unsigned>(res.status));
    message.set(http::field::content_type, res.content_type);
    for (const auto& [name, value] : res.headers) message.set(name, value);
    message.keep_alive(keep_alive);
  }

  bool write_whole(HttpResponse& res, bool keep) {
    http::response<http::string_body> message;
    head_fields(message, res, keep);
    if (!head_) message.body() = std::move(res.body);  // HEAD: the head alone
    message.prepare_payload();
    return on_strand([&](auto done) { http::async_write(stream_, message, std::move(done)); });
  }

  // Chunked for HTTP/1.1; an HTTP/1.0 client, which knows no chunks, gets the bytes as they
  // come and the end of the connection as the end of the answer.
  bool write_stream(HttpResponse& res, bool keep) {
    http::response<http::empty_body> head;
    head_fields(head, res, keep && http11_);
    if (http11_) head.chunked(true);
    http::response_serializer<http::empty_body> serializer(head);
    bool alive = on_strand(
        [&](auto done) { http::async_write_header(stream_, serializer, std::move(done)); });
    const ChunkWriter write = [&](std::string_view piece) {
      if (!alive) return false;
      if (piece.empty()) return true;  // an empty chunk would end the body
      alive = on_strand([&](auto done) {
        const net::const_buffer bytes(piece.data(), piece.size());
        if (http11_)
          net::async_write(stream_, http::make_chunk(bytes), std::move(done));
        else
          net::async_write(stream_, bytes, std::move(done));
      });
      return alive;
    };
    res.stream(write);  // told of a dead connection by `write`, it cancels its work
    if (alive && http11_)
      alive = on_strand(
          [&](auto done) { net::async_write(stream_, http::make_chunk_last(), std::move(done)); });
    return alive && http11_;  // HTTP/1.0: the connection's end ends the answer
  }

  // An answer from the I/O thread (a refusal, or `before_body`'s): written, then the
  // connection waits for its next request, or ends with a lingering close when the request's
  // body was left unread.
  void answer(HttpResponse res, bool body_unread) {
    owner_.waiting.done(id_);
    const bool keep = keep_alive_ && !body_unread && !res.close && !owner_.stopping;
    auto message = std::make_shared<http::response<http::string_body>>();
    head_fields(*message, res, keep);
    if (!head_) message->body() = std::move(res.body);
    message->prepare_payload();
    stream_.expires_after(after(owner_.settings.write_timeout_s));
    http::async_write(stream_, *message,
                      [self = shared_from_this(), message, keep](beast::error_code ec, size_t) {
                        if (ec) return self->shut();
                        if (keep) return self->wait_for_request();
                        self->linger();
                      });
  }

  void refuse(const HttpRequest& request, int status, const std::string& message,
              const std::string& code) {
    HttpResponse res;
    owner_.handlers.refuse(request, status, message, code, res);
    keep_alive_ = false;
    answer(std::move(res), true);
  }

  // After an answer whose request was not read whole: no more to send (FIN), then what the
  // client still sends is read and dropped for a while, so that closing with unread data
  // does not reset the connection before the client has read the answer.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLinger);
    drain(0);
  }

  void drain(size_t dropped) {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(16384),
                            [self = shared_from_this(), dropped](beast::error_code ec, size_t n) {
                              if (ec || dropped + n > kLingerBytes) return self->shut();
                              self->drain(dropped + n);
                            });
  }

  void shut() {
    owner_.waiting.done(id_);
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  HttpListener::Impl& owner_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest request_;
  bool keep_alive_ = true;
  bool in_handler_ = false;  // on the strand only
  bool body_slot_ = false;   // holds one of the body slots (on the strand, or its handler's)
  bool http11_ = true;       // the request's version is 1.1 (chunked answers, 100 Continue)
  bool head_ = false;        // a HEAD request: answers carry no body
  const uint64_t id_;
  std::string address_;
};

void HttpListener::Impl::accept() {
  acceptor.async_accept(net::make_strand(io), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping || ec == net::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors, say: try again shortly rather than spin.
      accept_pause.expires_after(std::chrono::milliseconds(100));
      accept_pause.async_wait([this](beast::error_code) { accept(); });
      return;
    }
    beast::error_code ignored;
    // Small answers (a verify round, an SSE event) go out at once, not after Nagle's delay.
    socket.set_option(tcp::no_delay(true), ignored);
    const bool over_capacity = connections.load() >= settings.max_connections;
    std::shared_ptr<Session> session;
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      const uint64_t id = next_id++;
      session = std::make_shared<Session>(*this, std::move(socket), id);
      sessions[id] = session;
    }
    session->start(over_capacity);
    accept();
  });
}

bool HttpListener::Impl::take_body_slot(const std::shared_ptr<Session>& session) {
  std::lock_guard<std::mutex> lock(body_mutex);
  if (bodies_reading < std::max<size_t>(1, settings.handler_threads)) {
    ++bodies_reading;
    return true;
  }
  body_queue.push_back(session);
  return false;
}

void HttpListener::Impl::give_body_slot() {
  std::shared_ptr<Session> next;
  {
    std::lock_guard<std::mutex> lock(body_mutex);
    if (!stopping && !body_queue.empty()) {
      next = std::move(body_queue.front());
      body_queue.pop_front();
    } else {
      --bodies_reading;  // else the slot passes to `next`
    }
  }
  if (next) next->resume_body();
}

void HttpListener::Impl::stop() {
  std::call_once(stopped, [this] {
    stopping = true;
    net::post(acceptor.get_executor(), [this] {
      beast::error_code ignored;
      acceptor.close(ignored);
      accept_pause.cancel();
    });
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      for (auto& [id, weak] : sessions)
        if (auto s = weak.lock()) live.push_back(std::move(s));
    }
    for (auto& s : live) s->close_if_waiting();
    live.clear();
    {
      std::lock_guard<std::mutex> lock(body_mutex);
      body_queue.clear();  // their bodies will not be read: they close
    }
    workers.join();  // the handlers finish, and their answers go out
    keep_running.reset();
    io.stop();
  });
}

HttpListener::HttpListener(HttpListenerSettings settings, HttpHandlers handlers)
    : impl_(std::make_unique<Impl>(settings, std::move(handlers))) {}

HttpListener::~HttpListener() {
  impl_->stop();
}

int HttpListener::bind(const std::string& host, int port) {
  try {
    tcp::resolver resolver(impl_->io);
    const tcp::endpoint at =
        resolver.resolve(host, std::to_string(port), tcp::resolver::passive)->endpoint();
    impl_->acceptor.open(at.protocol());
    // Not SO_REUSEPORT: with it a second server on the same port binds too and silently
    // takes half the connections.
    impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
    impl_->acceptor.bind(at);
    // The deepest accept queue the kernel allows (net.core.somaxconn): queue_limit, not the
    // backlog, decides refusals.
    impl_->acceptor.listen(net::socket_base::max_listen_connections);
    return impl_->acceptor.local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    beast::error_code ignored;
    impl_->acceptor.close(ignored);
    throw std::system_error(e.code().value(), std::generic_category(), e.what());
  }
}

void HttpListener::serve() {
  if (impl_->stopping) return;
  net::post(impl_->acceptor.get_executor(), [impl = impl_.get()] { impl->accept(); });
  // Reading and writing are light next to the handlers: two threads serve every connection.
  auto run = [impl = impl_.get()] {
    for (;;) {
      try {
        impl->io.run();
        return;
      } catch (const std::exception& e) {  // one connection's failure, not the server's
        std::fprintf(stderr, "specd serve: a connection failed: %s\n", e.what());
      }
    }
  };
  std::thread second(run);
  run();
  second.join();
}

void HttpListener::stop() {
  impl_->stop();
}

}  // namespace specd::server
