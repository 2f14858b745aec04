#include "engine/vocab_digest.hpp"

#include <cstdio>

#include "tokenizer/tokenizer.hpp"

namespace specd {
namespace {

constexpr uint64_t kOffset = 0xcbf29ce484222325ull, kPrime = 0x100000001b3ull;

void mix(uint64_t& h, const unsigned char* bytes, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= bytes[i];
    h *= kPrime;
  }
}

void mix_u32(uint64_t& h, uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                              static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 24)};
  mix(h, b, 4);
}

}  // namespace

uint64_t vocab_digest(const Tokenizer& tokenizer) {
  uint64_t h = kOffset;
  mix_u32(h, static_cast<uint32_t>(tokenizer.n_tokens()));
  for (int32_t id = 0; id < tokenizer.n_tokens(); ++id) {
    const std::string& text = tokenizer.token_text(id);
    mix_u32(h, static_cast<uint32_t>(text.size()));
    mix(h, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  }
  return h == 0 ? 1 : h;
}

std::string digest_hex(uint64_t digest) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(digest));
  return text;
}

}  // namespace specd
