// Emits generated tokens one at a time with plain decoding's stop checks (EOS, stop strings,
// max tokens), so output is cut exactly where plain decoding would cut it; streamed pieces
// (on_text) always add up to the final text.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "engine/generation_stats.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {

// Emits generated tokens one at a time, applying the stop conditions exactly as plain
// decoding does after each token. Streamed text always equals the final text: text that
// could still be the start of a stop string is held back until the next token decides.
class Emitter {
 public:
  // The text is that of the continuation of `prompt` (see StreamingDetokenizer).
  Emitter(const Tokenizer& tokenizer, const SamplingConfig& sampling, int max_tokens,
          const std::function<void(const std::string&)>& on_text,
          const std::vector<int32_t>& prompt)
      : tokenizer_(tokenizer),
        stops_(sampling.stop),
        ignore_eos_(sampling.ignore_eos),
        min_tokens_(sampling.min_tokens),
        max_tokens_(max_tokens),
        on_text_(on_text),
        detok_(tokenizer, sampling.render_special, prompt) {}

  // Returns false when generation must end after this token.
  bool push(int32_t token, GenerationResult& result) {
    ++count_;
    if (!ignore_eos_ && token == tokenizer_.eos_id()) {
      result.stop_reason = "eos";
      return false;
    }
    result.tokens.push_back(token);
    const size_t before = result.text.size();
    result.text += detok_.push(token);
    // The earliest stop string that ends in the new text (an older match would have ended
    // generation already).
    size_t cut = std::string::npos;
    const std::string* matched = nullptr;
    for (const std::string& stop : stops_) {
      // Before min_tokens no stop string ends the output (vLLM's rule).
      if (stop.empty() || count_ < min_tokens_) continue;
      const size_t from = before >= stop.size() ? before - stop.size() + 1 : 0;
      // A match never starts inside a UTF-8 character (the configuration refuses stop
      // strings that are not whole characters; a Config built in code is held to it here).
      for (size_t at = result.text.find(stop, from); at != std::string::npos;
           at = result.text.find(stop, at + 1))
        if (!continuation_byte(result.text[at])) {
          if (at < cut) {
            cut = at;
            matched = &stop;
          }
          break;
        }
    }
    if (cut != std::string::npos) {
      result.text.resize(cut);
      emit_up_to(result.text, cut);
      result.stop_reason = "stop";
      result.stop_string = *matched;
      stopped_ = true;
      return false;
    }
    emit_up_to(result.text, result.text.size() - held_back(result.text));
    if (count_ >= max_tokens_) {
      result.stop_reason = "length";
      return false;
    }
    return true;
  }

  void finish(GenerationResult& result) {
    if (!stopped_) result.text += detok_.flush();
    emit_up_to(result.text, result.text.size());
  }

  int remaining() const { return max_tokens_ - count_; }

 private:
  // Bytes at the end of `text` that begin some stop string (the longest such suffix,
  // shorter than the stop string itself: a whole one would have matched).
  static bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

  size_t held_back(const std::string& text) const {
    size_t held = 0;
    for (const std::string& stop : stops_) {
      for (size_t n = std::min(stop.size() - (stop.empty() ? 0 : 1), text.size()); n > held; --n)
        if (!continuation_byte(text[text.size() - n]) &&
            text.compare(text.size() - n, n, stop, 0, n) == 0) {
          held = n;
          break;
        }
    }
    return held;
  }

  void emit_up_to(const std::string& text, size_t end) {
    if (end <= emitted_) return;
    if (on_text_) on_text_(text.substr(emitted_, end - emitted_));
    emitted_ = end;
  }

  const Tokenizer& tokenizer_;
  const std::vector<std::string>& stops_;
  bool ignore_eos_;
  int min_tokens_;
  int max_tokens_;
  const std::function<void(const std::string&)>& on_text_;
  StreamingDetokenizer detok_;
  int count_ = 0;
  size_t emitted_ = 0;  // bytes of the text already given to on_text_
  bool stopped_ = false;
};

}  // namespace specd
