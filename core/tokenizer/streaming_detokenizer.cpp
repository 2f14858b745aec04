#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace specd {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool render_special,
                                           std::span<const int32_t> context)
    : tok_(tokenizer), render_special_(render_special) {
  for (int32_t id : context) {
    if (!tok_.token_to_piece(id, render_special_).empty()) {
      at_start_ = false;  // decode(context) already stripped its space
      break;
    }
  }
}

std::string StreamingDetokenizer::push(int32_t id) {
  std::string piece = tok_.token_to_piece(id, render_special_);
  if (at_start_ && !piece.empty()) {
    // Same rule as Tokenizer::decode: drop the space encode() put before the first text (of
    // context and stream together).
    if (tok_.add_space_prefix() && piece[0] == ' ') piece.erase(0, 1);
    at_start_ = false;
  }
  pending_ += piece;
  return take(false);
}

std::string StreamingDetokenizer::flush() {
  return take(true);
}

std::string StreamingDetokenizer::take(bool final) {
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Utf8Unit u = utf8_next(pending_, pos);
    if (u.valid) {
      out.append(pending_, pos, u.len);
      pos += u.len;
      continue;
    }
    if (!final && utf8_is_incomplete(pending_, pos)) break;  // wait for the next token
    out += "\xef\xbf\xbd";
    ++pos;
  }
  pending_.erase(0, pos);
  return out;
}

}  // namespace specd
