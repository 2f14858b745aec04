// The prompt tokens of a request, as the HTTP handler computes them before queueing: a
// completion prompt exactly as `specd run` encodes it; a chat with special-token texts
// turned into their ids only in the template's own text, message content always plain.
//
// Thread rules: a PromptEncoder only reads its tokenizer; encode() may run on any number
// of threads at once. The tokenizer must outlive it.
#pragma once

#include <cstdint>
#include <vector>

#include "server/chat_template.hpp"
#include "server/request.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd::server {

class PromptEncoder {
 public:
  explicit PromptEncoder(const Tokenizer& tokenizer);

  // A completion prompt: BOS / EOS as the vocabulary asks, special-token texts left as text
  // (what `specd run -p` does).
  std::vector<int32_t> encode_completion(const std::string& prompt) const;
  // A rendered chat: BOS / EOS as the vocabulary asks; a control token's text becomes the
  // token only inside scaffolding segments. Without special text in the content this equals
  // encoding the concatenated text with special-token parsing.
  std::vector<int32_t> encode_chat(const std::vector<ChatSegment>& segments) const;
  const Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  const Tokenizer& tokenizer_;
  std::vector<int32_t> control_by_length_;  // control-token ids, longest text first
};

// Sets request.prepared: a chat rendered with `family` (a forced tool call sets the
// grammar), or each completion prompt (token ids checked against the vocabulary). Checks
// each against the room the target has (`context_length`, or `kv_budget` tokens when that
// is positive and smaller) and clamps its max_tokens to the room left, so generation ends
// with "length". Throws RequestError (400) naming the field ("prompt[i]" in a batch).
void prepare_prompt(CompletionRequest& request, const PromptEncoder& encoder, ChatFamily family,
                    uint32_t context_length, int kv_budget);

}  // namespace specd::server
