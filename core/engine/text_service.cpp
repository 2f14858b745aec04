#include "engine/text_service.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "plugin/status_guard.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {

TokenizerTextService::TokenizerTextService(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {
  table_ = {sizeof(specd_text_service), 0, this, &encode, &decode, &encode_with};
}

specd_status* TokenizerTextService::encode(void* context, const char* text, uint64_t length,
                                           specd_token* tokens, uint32_t capacity,
                                           uint32_t* out_count) {
  return encode_with(context, text, length, 0, tokens, capacity, out_count);
}

specd_status* TokenizerTextService::encode_with(void* context, const char* text, uint64_t length,
                                                uint32_t flags, specd_token* tokens,
                                                uint32_t capacity, uint32_t* out_count) {
  const auto* self = static_cast<const TokenizerTextService*>(context);
  return status_guard([&] {
    if (!out_count || (length > 0 && !text) || (capacity > 0 && !tokens))
      throw UsageError("text service: encode needs text, out_count and room for capacity ids");
    if (flags & ~(SPECD_ENCODE_BOS | SPECD_ENCODE_CONTINUATION))
      throw UsageError("text service: unknown encode flags " + std::to_string(flags));
    const Tokenizer& tokenizer = *self->tokenizer_;
    std::vector<int32_t> ids;
    if ((flags & SPECD_ENCODE_BOS) && tokenizer.add_bos() && tokenizer.bos_id() >= 0)
      ids.push_back(tokenizer.bos_id());
    const std::vector<int32_t> text_ids =
        tokenizer.encode(std::string_view(text ? text : "", length), false, false,
                         (flags & SPECD_ENCODE_CONTINUATION) != 0);
    ids.insert(ids.end(), text_ids.begin(), text_ids.end());
    *out_count = static_cast<uint32_t>(ids.size());
    std::copy_n(ids.begin(), std::min<size_t>(ids.size(), capacity), tokens);
  });
}

specd_status* TokenizerTextService::decode(void* context, const specd_token* tokens, uint32_t count,
                                           char* text, uint64_t capacity, uint64_t* out_length) {
  const auto* self = static_cast<const TokenizerTextService*>(context);
  return status_guard([&] {
    if (!out_length || (count > 0 && !tokens) || (capacity > 0 && !text))
      throw UsageError("text service: decode needs ids, out_length and room for capacity bytes");
    const Tokenizer& tokenizer = *self->tokenizer_;
    for (uint32_t i = 0; i < count; ++i)
      if (tokens[i] < 0 || tokens[i] >= tokenizer.n_tokens())
        throw UsageError("text service: id " + std::to_string(tokens[i]) + " at " +
                         std::to_string(i) + " is outside the tokenizer's " +
                         std::to_string(tokenizer.n_tokens()) + " tokens");
    // Each token's bytes as the host streams them: no space-prefix removal, which only
    // applies to the start of a whole text.
    std::string bytes;
    for (uint32_t i = 0; i < count; ++i) bytes += tokenizer.token_to_piece(tokens[i]);
    *out_length = bytes.size();
    std::copy_n(bytes.begin(), std::min<uint64_t>(bytes.size(), capacity), text);
  });
}

}  // namespace specd
