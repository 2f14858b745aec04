// KV-cache events for prefix-aware routers (the Kubernetes inference gateway's scorers,
// llm-d, Dynamo), in vLLM's format, so that a router that reads vLLM's events reads specd's:
//   - a ZeroMQ PUB socket sends multipart messages [topic, sequence number (8 bytes,
//     big-endian), payload], one every 10 ms at most while the prefix index changes (blocks
//     of a cache_salt partition are never published: their tokens are that tenant's);
//   - the payload is a msgpack array [timestamp (seconds, float), events], each event an
//     array whose first element names it: ["BlockStored", [hash], parent hash or nil,
//     [token ids], block size, nil (LoRA), medium], ["BlockRemoved", [hash, ...], medium],
//     ["AllBlocksCleared"] (sent first, so a subscriber of a restarted server starts over);
//   - a ROUTER socket answers replay requests: a client (DEALER) sends ["", first sequence
//     number (8 bytes, big-endian)] and gets ["", sequence, payload] for every kept batch from
//     there (the last 10,000), then ["", -1 (8 bytes), ""].
// `medium` is "GPU" for the engine's own pool whatever the device: vLLM's name for the
// primary KV cache (its "CPU" marks offloaded copies, which routers may score lower).
// Block hashes are PrefixIndex::chain_hash (prefix_index.hpp): a router computes them from a
// prompt's tokens alone.
//
// Thread rule: the listener calls (stored, removed) come from the pool's thread; sending runs
// on the publisher's own thread; the rest from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "models/prefix_index.hpp"

namespace specd::server {

struct KvEventsSettings {
  std::string endpoint;         // e.g. "tcp://127.0.0.1:5557"
  std::string replay_endpoint;  // "" = no replay
  std::string topic = "kv-events";
  std::string medium = "CPU";   // where the blocks live: "CPU" or "GPU"
  size_t kept_batches = 10000;  // for replay
};

class KvEventPublisher : public PrefixListener {
 public:
  // Binds the sockets (throws specd::Error naming the endpoint when one cannot be bound) and
  // starts the sending thread, which sends AllBlocksCleared first.
  explicit KvEventPublisher(KvEventsSettings settings);
  ~KvEventPublisher() override;  // sends what is pending, then closes the sockets

  void stored(uint64_t hash, std::optional<uint64_t> parent,
              std::span<const int32_t> tokens) override;
  void removed(uint64_t hash) override;

  // The pool's block rows, for BlockStored (set before the first block is stored).
  void set_block_size(uint32_t rows) { block_size_ = rows; }
  // The number of batches after which every event told so far has been sent (those sent,
  // plus the one that will carry what is pending).
  uint64_t batches_through_now();

 private:
  struct Event {
    enum class Kind { stored, removed, cleared } kind;
    std::vector<uint64_t> hashes;
    std::optional<uint64_t> parent;
    std::vector<int32_t> tokens;
  };
  struct Sockets;
  void run();
  void answer_replay();  // one request on the replay socket
  void send_pending();   // the events told since the last batch, as one batch
  std::string encode(const std::vector<Event>& events) const;

  KvEventsSettings settings_;
  std::unique_ptr<Sockets> sockets_;
  std::mutex mutex_;
  std::vector<Event> pending_;  // mutex_
  uint64_t next_sequence_ = 0;  // mutex_: taken with the events it carries
  std::atomic<uint32_t> block_size_{16};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace specd::server
