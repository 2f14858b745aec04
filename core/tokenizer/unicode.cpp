#include "tokenizer/unicode.hpp"

#include <algorithm>
#include <array>
#include <iterator>

#include "tokenizer/unicode_tables.hpp"

namespace specd {

namespace {

bool is_cont(uint8_t b) {
  return (b & 0xC0) == 0x80;
}

// Expected length for a lead byte and the allowed range of the second byte (which rules out
// overlong forms, surrogates and values past U+10FFFF), or len 0 for an invalid lead.
struct Lead {
  uint32_t len;
  uint8_t lo, hi;
};

Lead lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

template <size_t N>
bool in_ranges(const CodepointRange (&table)[N], uint32_t cp) {
  auto it = std::upper_bound(std::begin(table), std::end(table), cp,
                             [](uint32_t c, const CodepointRange& r) { return c < r.first; });
  return it != std::begin(table) && cp <= std::prev(it)->last;
}

struct Gpt2ByteMap {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 256 + 68> to_byte{};  // the image is exactly [0, 324)
  Gpt2ByteMap() {
    to_byte.fill(-1);
    uint32_t extra = 0;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_cp[b] = printable ? b : 256 + extra++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Gpt2ByteMap& gpt2_map() {
  static const Gpt2ByteMap map;
  return map;
}

}  // namespace

Utf8Unit utf8_next(std::string_view s, size_t pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  const Lead lead = lead_info(b0);
  if (lead.len == 1) return {b0, 1, true};
  if (lead.len == 0 || pos + lead.len > s.size()) return {b0, 1, false};
  const auto b1 = static_cast<uint8_t>(s[pos + 1]);
  if (b1 < lead.lo || b1 > lead.hi) return {b0, 1, false};
  uint32_t cp = b0 & (0xFF >> (lead.len + 1));
  for (uint32_t k = 1; k < lead.len; ++k) {
    const auto b = static_cast<uint8_t>(s[pos + k]);
    if (!is_cont(b)) return {b0, 1, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, lead.len, true};
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const Utf8Unit u = utf8_next(s, i);
    if (u.valid)
      out.append(s.substr(i, u.len));
    else
      out += "\xEF\xBF\xBD";
    i += u.len;
  }
  return out;
}

bool utf8_is_incomplete(std::string_view s, size_t pos) {
  const Lead lead = lead_info(static_cast<uint8_t>(s[pos]));
  if (lead.len < 2 || pos + lead.len <= s.size()) return false;
  for (size_t k = pos + 1; k < s.size(); ++k) {
    const auto b = static_cast<uint8_t>(s[k]);
    if (k == pos + 1 ? (b < lead.lo || b > lead.hi) : !is_cont(b)) return false;
  }
  return true;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool unicode_is_letter(uint32_t cp) {
  return in_ranges(kUnicodeLetters, cp);
}
bool unicode_is_number(uint32_t cp) {
  return in_ranges(kUnicodeNumbers, cp);
}
bool unicode_is_whitespace(uint32_t cp) {
  return in_ranges(kUnicodeWhitespace, cp);
}
bool unicode_is_punctuation(uint32_t cp) {
  return in_ranges(kUnicodePunctuation, cp);
}
bool unicode_is_symbol(uint32_t cp) {
  return in_ranges(kUnicodeSymbols, cp);
}
bool unicode_is_mark(uint32_t cp) {
  return in_ranges(kUnicodeMarks, cp);
}

uint32_t gpt2_byte_to_codepoint(uint8_t byte) {
  return gpt2_map().to_cp[byte];
}

int gpt2_codepoint_to_byte(uint32_t cp) {
  const auto& m = gpt2_map().to_byte;
  return cp < m.size() ? m[cp] : -1;
}

}  // namespace specd
