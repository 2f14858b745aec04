// What a KV cache costs, and the message when the target's cannot be allocated: it names the
// model, the context it was sized for and where that came from ([engine] context or the
// model's context_length), the bytes it needs, and what a smaller context would take.
#pragma once

#include <cstdint>
#include <string>

#include "models/model_info.hpp"

namespace specd {

// Bytes of a llama KV cache of `tokens` rows (K and V of every layer in f32, plus the row
// index; a sliding-window layer's about its window's rows), as LlamaModel::new_cache takes it.
uint64_t kv_cache_bytes(const ModelInfo& info, uint64_t tokens);

// `context_setting` is [engine] context (0 = the model's context_length) and `where` its
// location in the configuration; `cause` the allocation error.
std::string kv_cache_error(const ModelInfo& info, uint64_t tokens, int64_t context_setting,
                           const std::string& where, const std::string& cause);

}  // namespace specd
