// A request's cache_salt as its prefix-cache partition (prefix_index.hpp). Requests share
// cached prompt blocks, and so the time to first token and specd_prefix_hit_rows_total that
// reveal them, only with requests of the same salt; without one, all unsalted requests share.
// Thread rule: any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace specd::server {

// 0 for "" (the shared partition); else the first 64 bits of SHA-256 over a secret drawn when
// the process first calls this and the salt (never 0), so that no client can compute a salt
// that lands in another's partition.
uint64_t cache_salt_partition(std::string_view salt);

}  // namespace specd::server
