#include "server/cache_salt.hpp"

#include <random>
#include <string>

#include "models/heads/sha256.hpp"

namespace specd::server {

uint64_t cache_salt_partition(std::string_view salt) {
  if (salt.empty()) return 0;
  static const std::string secret = [] {
    std::random_device device;  // the kernel's entropy (getrandom)
    std::string s;
    for (int i = 0; i < 8; ++i) {
      const uint32_t word = device();
      s.append(reinterpret_cast<const char*>(&word), sizeof word);
    }
    return s;
  }();
  const std::string keyed = secret + std::string(salt);
  const std::string digest = sha256_hex(keyed.data(), keyed.size());
  const uint64_t partition = std::stoull(digest.substr(0, 16), nullptr, 16);
  return partition ? partition : 1;
}

}  // namespace specd::server
