#include <algorithm>

#include "tokenizer/tokenizer.hpp"

namespace specd {

namespace {

bool is_padding(const Tokenizer& t, int32_t id) {
  const TokenType type = t.vocab().type[id];
  if (type == TokenType::kControl || type == TokenType::kUnused || type == TokenType::kUndefined) {
    return true;
  }
  const std::string& s = t.vocab().text[id];
  return s.rfind("[PAD", 0) == 0 || s.rfind("<pad", 0) == 0;
}

bool differ(std::string* why, std::string what) {
  if (why) *why = std::move(what);
  return false;
}

const char* model_name(TokenizerModel m) {
  return m == TokenizerModel::kSpm ? "llama" : "gpt2";
}

}  // namespace

bool same_vocabulary(const Tokenizer& a, const Tokenizer& b, std::string* why) {
  if (a.model() != b.model()) {
    return differ(why, std::string("tokenizer models differ (") + model_name(a.model()) + " vs " +
                           model_name(b.model()) + ")");
  }
  const int32_t n = std::min(a.n_tokens(), b.n_tokens());
  for (int32_t id = 0; id < n; ++id) {
    if (a.vocab().text[id] != b.vocab().text[id]) {
      return differ(why, "token " + std::to_string(id) + " is '" + a.vocab().text[id] +
                             "' in one vocabulary and '" + b.vocab().text[id] + "' in the other");
    }
  }
  const Tokenizer& longer = a.n_tokens() >= b.n_tokens() ? a : b;
  for (int32_t id = n; id < longer.n_tokens(); ++id) {
    if (!is_padding(longer, id)) {
      return differ(why, "token " + std::to_string(id) + " ('" + longer.vocab().text[id] +
                             "') exists only in the larger vocabulary (" +
                             std::to_string(longer.n_tokens()) + " vs " + std::to_string(n) +
                             " tokens) and is not padding");
    }
  }
  if (a.bos_id() != b.bos_id() || a.eos_id() != b.eos_id()) {
    return differ(why, "special tokens differ (bos " + std::to_string(a.bos_id()) + " vs " +
                           std::to_string(b.bos_id()) + ", eos " + std::to_string(a.eos_id()) +
                           " vs " + std::to_string(b.eos_id()) + ")");
  }
  if (why) why->clear();
  return true;
}

}  // namespace specd
