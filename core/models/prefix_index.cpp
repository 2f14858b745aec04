#include "models/prefix_index.hpp"

#include <algorithm>
#include <string>

#include "models/heads/sha256.hpp"

namespace specd {

uint64_t PrefixIndex::key_of(int32_t parent, std::span<const int32_t> tokens, uint64_t partition) {
  // FNV-1a over the partition, the parent id and the tokens: it only picks the bucket (find
  // compares).
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint32_t v) {
    for (int i = 0; i < 4; ++i) {
      h ^= (v >> (8 * i)) & 0xffu;
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<uint32_t>(partition));
  mix(static_cast<uint32_t>(partition >> 32));
  mix(static_cast<uint32_t>(parent));
  for (int32_t t : tokens) mix(static_cast<uint32_t>(t));
  return h;
}

uint64_t PrefixIndex::chain_hash(uint64_t parent_hash, std::span<const int32_t> tokens) {
  std::string bytes;
  bytes.reserve(8 + 4 * tokens.size());
  for (int i = 7; i >= 0; --i) bytes += static_cast<char>((parent_hash >> (8 * i)) & 0xffu);
  for (int32_t t : tokens)
    for (int i = 0; i < 4; ++i) bytes += static_cast<char>((uint32_t(t) >> (8 * i)) & 0xffu);
  return std::stoull(sha256_hex(bytes.data(), bytes.size()).substr(0, 16), nullptr, 16);
}

std::vector<uint64_t> PrefixIndex::hashes() const {
  std::vector<uint64_t> out;
  out.reserve(entries_.size());
  for (const auto& [block, e] : entries_)
    if (e.partition == 0) out.push_back(e.hash);
  return out;
}

int32_t PrefixIndex::find(int32_t parent, std::span<const int32_t> tokens,
                          uint64_t partition) const {
  const auto [first, last] = by_key_.equal_range(key_of(parent, tokens, partition));
  for (auto it = first; it != last; ++it) {
    const Entry& e = entries_.at(it->second);
    if (e.parent == parent && e.partition == partition &&
        std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin(), tokens.end()))
      return it->second;
  }
  return -1;
}

bool PrefixIndex::insert(int32_t block, int32_t parent, std::span<const int32_t> tokens,
                         uint64_t partition) {
  if (indexed(block) || find(parent, tokens, partition) >= 0) return false;
  if (parent >= 0 && !indexed(parent)) return false;  // its prefix is not indexed
  Entry e;
  e.parent = parent;
  e.partition = partition;
  e.key = key_of(parent, tokens, partition);
  e.tokens.assign(tokens.begin(), tokens.end());
  const std::optional<uint64_t> parent_hash =
      parent >= 0 ? std::optional<uint64_t>(entries_.at(parent).hash) : std::nullopt;
  e.hash = chain_hash(parent_hash.value_or(partition), tokens);
  if (listener_ && partition == 0) listener_->stored(e.hash, parent_hash, tokens);
  by_key_.emplace(e.key, block);
  if (parent >= 0) entries_.at(parent).children.push_back(block);
  entries_.emplace(block, std::move(e));
  return true;
}

void PrefixIndex::erase(int32_t block, std::vector<int32_t>& removed) {
  auto it = entries_.find(block);
  if (it == entries_.end()) return;
  // Detach from the parent, then remove the subtree depth first.
  if (it->second.parent >= 0) {
    auto& siblings = entries_.at(it->second.parent).children;
    siblings.erase(std::find(siblings.begin(), siblings.end(), block));
  }
  std::vector<int32_t> stack{block};
  while (!stack.empty()) {
    const int32_t b = stack.back();
    stack.pop_back();
    auto e = entries_.find(b);
    stack.insert(stack.end(), e->second.children.begin(), e->second.children.end());
    const auto [first, last] = by_key_.equal_range(e->second.key);
    for (auto k = first; k != last; ++k)
      if (k->second == b) {
        by_key_.erase(k);
        break;
      }
    if (e->second.parked) lru_.erase(e->second.lru);
    if (listener_ && e->second.partition == 0) listener_->removed(e->second.hash);
    entries_.erase(e);
    removed.push_back(b);
  }
}

void PrefixIndex::park(int32_t block) {
  Entry& e = entries_.at(block);
  if (e.parked) return;
  e.parked = true;
  e.lru = lru_.insert(lru_.end(), block);
}

void PrefixIndex::unpark(int32_t block) {
  Entry& e = entries_.at(block);
  if (!e.parked) return;
  lru_.erase(e.lru);
  e.parked = false;
}

bool PrefixIndex::parked(int32_t block) const {
  auto it = entries_.find(block);
  return it != entries_.end() && it->second.parked;
}

}  // namespace specd
