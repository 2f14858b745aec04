// UTF-8 handling for the tokenizers. Text may hold invalid UTF-8: each invalid byte is its own
// unit so that byte-level tokenizers can still represent (and round trip) it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace specd {

struct Utf8Unit {
  uint32_t cp = 0;   // the codepoint, or the byte value when !valid
  uint32_t len = 1;  // bytes consumed (1 for an invalid byte)
  bool valid = false;
};

// Decodes the sequence at s[pos] (pos < s.size()). Overlong forms, surrogates, values past
// U+10FFFF and truncated sequences give one invalid byte.
Utf8Unit utf8_next(std::string_view s, size_t pos);
// `s` with every byte that does not start a valid UTF-8 character replaced by U+FFFD.
std::string valid_utf8(std::string_view s);
// True when s[pos..] is the start of a valid sequence that is merely cut off by the end of s.
bool utf8_is_incomplete(std::string_view s, size_t pos);
void utf8_append(std::string& out, uint32_t cp);

bool unicode_is_letter(uint32_t cp);       // \p{L}
bool unicode_is_number(uint32_t cp);       // \p{N}
bool unicode_is_whitespace(uint32_t cp);   // \s (White_Space)
bool unicode_is_punctuation(uint32_t cp);  // \p{P}
bool unicode_is_symbol(uint32_t cp);       // \p{S}
bool unicode_is_mark(uint32_t cp);         // \p{M}

// GPT-2's reversible map of every byte to a printable codepoint (its bytes_to_unicode()).
uint32_t gpt2_byte_to_codepoint(uint8_t byte);
// The byte for a mapped codepoint, or -1 when cp is not in the map's image.
int gpt2_codepoint_to_byte(uint32_t cp);

}  // namespace specd
