#include "engine/kv_cache_size.hpp"

#include <algorithm>

#include "models/kv_cache.hpp"
#include "models/kv_layout.hpp"

namespace specd {

uint64_t kv_cache_bytes(const ModelInfo& info, uint64_t tokens) {
  const uint64_t per_layer =
      2ull *
      static_cast<uint64_t>(kv_row_bytes(static_cast<int64_t>(info.n_head_kv) * info.head_dim));
  // Sliding-window layers keep about their window's rows (and the slack a truncate needs) in
  // a pool of their own (kv_cache.hpp), however long the context.
  const auto sliding =
      static_cast<uint64_t>(std::count(info.sliding.begin(), info.sliding.end(), true));
  const uint64_t window_rows =
      std::min<uint64_t>(tokens, static_cast<uint64_t>(KvCache::window_rows(info.sliding_window)));
  return tokens * (per_layer * (static_cast<uint64_t>(info.n_layer) - sliding) + sizeof(int32_t)) +
         window_rows * per_layer * sliding;
}

std::string kv_cache_error(const ModelInfo& info, uint64_t tokens, int64_t context_setting,
                           const std::string& where, const std::string& cause) {
  std::string m = "target " + info.path + ": cannot allocate the KV cache for a context of " +
                  std::to_string(tokens) + " tokens (";
  if (context_setting > 0)
    m += "[engine] context = " + std::to_string(context_setting) + " at " + where;
  else
    m += "the model's context_length " + std::to_string(info.n_ctx) +
         ", because [engine] context is 0 (" + where + ")";
  m += "): it needs " + std::to_string(kv_cache_bytes(info, tokens)) + " bytes, " +
       std::to_string(kv_cache_bytes(info, 1)) + " per token (" + cause + ")";
  const uint64_t smaller = tokens > 4096 ? 4096 : std::max<uint64_t>(tokens / 4, 1);
  m += "; set [engine] context to fewer tokens: context = " + std::to_string(smaller) + " needs " +
       std::to_string(kv_cache_bytes(info, smaller)) + " bytes";
  return m;
}

}  // namespace specd
