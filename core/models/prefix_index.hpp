// The prefix cache's index over one KvPool's blocks (kv_pool.hpp): full blocks of tokens,
// content-addressed by (the block holding the tokens before them, their own tokens), and the
// least-recently-used order of those that no cache holds any more.
//
// Every block belongs to a partition (0, or a request's cache_salt as a 64-bit key): a lookup
// finds only blocks published in its own partition, so prompts are shared within it only.
//
// Keying a block by its parent block rather than by a hash of the whole prefix makes a hit
// exact by construction: a lookup walks from the sequence's start, block by block, comparing
// tokens (the 64-bit hash only picks the bucket), so two prefixes that collide in the hash
// never share rows. Dropping a block drops every block indexed under it too (their parent's
// rows are gone), so no entry ever names a block id that was reused for other rows.
//
// An indexed block is read-only for as long as it is indexed: caches write only rows after
// their committed, block-aligned prefix (kv_cache.hpp), and the pool hands an indexed block
// out again only after erase().
//
// Thread rule: the pool's (its device's) — one thread at a time.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace specd {

// Told of every block of partition 0 (no cache_salt) that enters or leaves an index (the
// server's KV-cache events), on the index's thread, while the index changes: keep it short.
// A salted partition's blocks are never told: their tokens are that tenant's.
class PrefixListener {
 public:
  virtual ~PrefixListener() = default;
  // A block indexed: its chain hash, its parent's (nullopt at a sequence's start), its tokens.
  virtual void stored(uint64_t hash, std::optional<uint64_t> parent,
                      std::span<const int32_t> tokens) = 0;
  virtual void removed(uint64_t hash) = 0;
};

class PrefixIndex {
 public:
  // A block's chain hash, which a router can compute from a prompt's tokens alone: the first
  // 8 bytes (big-endian) of SHA-256 over the parent's chain hash (8 bytes, big-endian; for a
  // sequence's first block the partition, 0 without a cache_salt) and the block's tokens
  // (4 bytes each, little-endian).
  static uint64_t chain_hash(uint64_t parent_hash, std::span<const int32_t> tokens);
  uint64_t hash_of(int32_t block) const { return entries_.at(block).hash; }
  // The chain hash of every indexed block of partition 0 (what the listener is told of), in
  // no order.
  std::vector<uint64_t> hashes() const;
  // Null: nobody listens. The listener must outlive the index or be unset first.
  void set_listener(PrefixListener* listener) { listener_ = listener; }

  // The indexed block of `partition` holding `tokens` right after block `parent` (-1: at the
  // sequence's start), or -1.
  int32_t find(int32_t parent, std::span<const int32_t> tokens, uint64_t partition = 0) const;
  // Indexes `block` as holding `tokens` after `parent` in `partition`. False (nothing changes)
  // when that key already names a block, or `block` is indexed already.
  bool insert(int32_t block, int32_t parent, std::span<const int32_t> tokens,
              uint64_t partition = 0);
  bool indexed(int32_t block) const { return entries_.count(block) != 0; }
  size_t size() const { return entries_.size(); }

  // Removes `block` and every block indexed under it; appends the removed ids to `removed`
  // (`block` first). Parked ones leave the LRU order.
  void erase(int32_t block, std::vector<int32_t>& removed);

  // An indexed block that no cache holds is parked: kept with its rows, evictable, oldest
  // first. unpark() when a cache takes it again.
  void park(int32_t block);
  void unpark(int32_t block);
  bool parked(int32_t block) const;
  size_t parked_count() const { return lru_.size(); }
  // The least recently parked block, or -1.
  int32_t oldest_parked() const { return lru_.empty() ? -1 : lru_.front(); }

 private:
  struct Entry {
    int32_t parent;
    uint64_t partition;
    uint64_t key;
    uint64_t hash;  // chain_hash
    std::vector<int32_t> tokens;
    std::vector<int32_t> children;
    bool parked = false;
    std::list<int32_t>::iterator lru;
  };
  static uint64_t key_of(int32_t parent, std::span<const int32_t> tokens, uint64_t partition);

  std::unordered_map<int32_t, Entry> entries_;         // by block
  std::unordered_multimap<uint64_t, int32_t> by_key_;  // key -> block
  std::list<int32_t> lru_;                             // parked blocks, oldest first
  PrefixListener* listener_ = nullptr;
};

}  // namespace specd
