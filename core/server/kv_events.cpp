#include "server/kv_events.hpp"

#include <chrono>
#include <deque>
#include <utility>

#include <msgpack.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/error.hpp"
#include "common/log.hpp"

namespace specd::server {
namespace {

std::string big_endian(int64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[size_t(i)] = static_cast<char>((uint64_t(v) >> (56 - 8 * i)) & 0xffu);
  return out;
}

int64_t from_big_endian(const zmq::message_t& m) {
  if (m.size() != 8) return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v = v << 8 | static_cast<const unsigned char*>(m.data())[i];
  return static_cast<int64_t>(v);
}

}  // namespace

struct KvEventPublisher::Sockets {
  zmq::context_t context{1};
  zmq::socket_t pub{context, zmq::socket_type::pub};
  std::optional<zmq::socket_t> replay;
  std::deque<std::pair<int64_t, std::string>> kept;  // (sequence, payload), oldest first
};

KvEventPublisher::KvEventPublisher(KvEventsSettings settings)
    : settings_(std::move(settings)), sockets_(std::make_unique<Sockets>()) {
  auto bind = [](zmq::socket_t& socket, const std::string& endpoint, const char* what) {
    try {
      socket.set(zmq::sockopt::linger, 1000);  // closing waits at most a second for sends
      socket.bind(endpoint);
    } catch (const zmq::error_t& e) {
      throw Error(std::string("cannot bind the KV events ") + what + " socket to '" + endpoint +
                  "': " + e.what());
    }
  };
  bind(sockets_->pub, settings_.endpoint, "publisher");
  if (!settings_.replay_endpoint.empty()) {
    sockets_->replay.emplace(sockets_->context, zmq::socket_type::router);
    // One replay of every kept batch fits under the high-water mark; a client that asks
    // again and again without reading has the rest dropped (ROUTER drops at the mark).
    sockets_->replay->set(zmq::sockopt::sndhwm, static_cast<int>(settings_.kept_batches + 2));
    bind(*sockets_->replay, settings_.replay_endpoint, "replay");
  }
  pending_.push_back(Event{Event::Kind::cleared, {}, std::nullopt, {}});
  thread_ = std::thread([this] { run(); });
}

KvEventPublisher::~KvEventPublisher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

uint64_t KvEventPublisher::batches_through_now() {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_sequence_ + (pending_.empty() ? 0 : 1);
}

void KvEventPublisher::stored(uint64_t hash, std::optional<uint64_t> parent,
                              std::span<const int32_t> tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(Event{Event::Kind::stored, {hash}, parent, {tokens.begin(), tokens.end()}});
}

void KvEventPublisher::removed(uint64_t hash) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Removals come in runs (a block and those under it): one event for the run.
  if (!pending_.empty() && pending_.back().kind == Event::Kind::removed)
    pending_.back().hashes.push_back(hash);
  else
    pending_.push_back(Event{Event::Kind::removed, {hash}, std::nullopt, {}});
}

std::string KvEventPublisher::encode(const std::vector<Event>& events) const {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  pk.pack_array(2);
  pk.pack_double(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  pk.pack_array(static_cast<uint32_t>(events.size()));
  for (const Event& e : events) {
    switch (e.kind) {
      case Event::Kind::stored:
        pk.pack_array(7);
        pk.pack(std::string("BlockStored"));
        pk.pack(e.hashes);
        if (e.parent)
          pk.pack_uint64(*e.parent);
        else
          pk.pack_nil();
        pk.pack(e.tokens);
        pk.pack_uint32(block_size_.load());
        pk.pack_nil();  // lora_id
        pk.pack(settings_.medium);
        break;
      case Event::Kind::removed:
        pk.pack_array(3);
        pk.pack(std::string("BlockRemoved"));
        pk.pack(e.hashes);
        pk.pack(settings_.medium);
        break;
      case Event::Kind::cleared:
        pk.pack_array(1);
        pk.pack(std::string("AllBlocksCleared"));
        break;
    }
  }
  return std::string(buffer.data(), buffer.size());
}

void KvEventPublisher::answer_replay() {
  Sockets& s = *sockets_;
  zmq::multipart_t request;
  if (!request.recv(*s.replay, ZMQ_DONTWAIT)) return;
  // [client id, "", first sequence]; anything else is ignored.
  if (request.size() != 3) return;
  const zmq::message_t id = request.pop();
  const int64_t first = from_big_endian(request.at(1));
  auto send = [&](int64_t seq, const std::string& payload) {
    zmq::multipart_t reply;
    reply.addmem(id.data(), id.size());
    reply.addstr("");
    reply.addstr(big_endian(seq));
    reply.addstr(payload);
    reply.send(*s.replay, ZMQ_DONTWAIT);  // past the high-water mark: dropped
  };
  if (first >= 0)
    for (const auto& [seq, payload] : s.kept)
      if (seq >= first) send(seq, payload);
  send(-1, "");
}

void KvEventPublisher::send_pending() {
  Sockets& s = *sockets_;
  std::vector<Event> events;
  int64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events.swap(pending_);
    if (events.empty()) return;
    seq = static_cast<int64_t>(next_sequence_++);
  }
  // Kept before it is sent: a batch the socket fails to send can still be replayed.
  s.kept.emplace_back(seq, encode(events));
  if (s.kept.size() > settings_.kept_batches) s.kept.pop_front();
  zmq::multipart_t message;
  message.addstr(settings_.topic);
  message.addstr(big_endian(seq));
  message.addstr(s.kept.back().second);
  message.send(s.pub);  // PUB never blocks: a slow subscriber drops, then replays
}

void KvEventPublisher::run() {
  Sockets& s = *sockets_;
  while (true) {
    const bool stopping = stop_.load();
    // An error (a socket's, an allocation's) is logged and the loop goes on: the server
    // never ends for its events, and a subscriber that missed a batch asks for it again.
    try {
      if (s.replay) {
        zmq::pollitem_t item{static_cast<void*>(*s.replay), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, std::chrono::milliseconds(stopping ? 0 : 10));
        if (item.revents & ZMQ_POLLIN) answer_replay();
      } else if (!stopping) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      send_pending();
    } catch (const std::exception& e) {
      log_message(LogLevel::warn, std::string("KV events: ") + e.what());
    }
    if (stopping) break;
  }
}

}  // namespace specd::server
