// A tokenizer as the ABI's text service (proposer.h, specd_text_service): the target's for a
// proposer's context, a draft model's for the model service's `text`.
#pragma once

#include "specd/proposer.h"

namespace specd {

class Tokenizer;

class TokenizerTextService {
 public:
  // `tokenizer` must outlive this object. Not copyable: the table points at it.
  explicit TokenizerTextService(const Tokenizer& tokenizer);
  TokenizerTextService(const TokenizerTextService&) = delete;
  TokenizerTextService& operator=(const TokenizerTextService&) = delete;

  const specd_text_service* table() const { return &table_; }

 private:
  static specd_status* encode(void* context, const char* text, uint64_t length, specd_token* tokens,
                              uint32_t capacity, uint32_t* out_count);
  static specd_status* encode_with(void* context, const char* text, uint64_t length, uint32_t flags,
                                   specd_token* tokens, uint32_t capacity, uint32_t* out_count);
  static specd_status* decode(void* context, const specd_token* tokens, uint32_t count, char* text,
                              uint64_t capacity, uint64_t* out_length);

  const Tokenizer* tokenizer_;
  specd_text_service table_{};
};

}  // namespace specd
