#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tokenizer/pretokenizer.hpp"
#include "tokenizer/unicode.hpp"

using namespace specd;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (auto w : pretokenize_gpt2(s)) out.emplace_back(w);
  return out;
}

}  // namespace

// Expected splits are what Python's `regex` module gives for the GPT-2 pattern.
TEST_CASE("gpt-2 pre-tokenizer matches the regex on known cases") {
  using V = std::vector<std::string>;
  CHECK(split("Hello world's  123 foo\n\n  bar") ==
        V{"Hello", " world", "'s", " ", " 123", " foo", "\n\n ", " bar"});
  CHECK(split("I'm don't they're we've you'll he'd DON'T 's") ==
        V{"I", "'m", " don", "'t", " they", "'re", " we", "'ve", " you", "'ll", " he", "'d", " DON",
          "'", "T", " '", "s"});
  CHECK(split("na\u00efve caf\u00e9 \u03a9\u03bc\u03ad\u03b3\u03b1") ==
        V{"na\u00efve", " caf\u00e9", " \u03a9\u03bc\u03ad\u03b3\u03b1"});
  CHECK(split("abc123def \u0663\u06645 \u00bd") ==
        V{"abc", "123", "def", " \u0663\u06645", " \u00bd"});
  CHECK(split("hi \U0001F44B\U0001F3FD! ok?!") == V{"hi", " \U0001F44B\U0001F3FD!", " ok", "?!"});
  CHECK(split("a  ") == V{"a", "  "});
  CHECK(split("  a\t\tb \u00a0c\u3000d") ==
        V{" ", " a", "\t", "\t", "b", " ", "\u00a0", "c", "\u3000", "d"});
  CHECK(split("x\r\n\r\ny") == V{"x", "\r\n\r", "\n", "y"});
  CHECK(split("").empty());
  CHECK(split(" ") == V{" "});
  CHECK(split("!!'s '") == V{"!!'", "s", " '"});
  CHECK(split("a\u2028b  \u2029") == V{"a", "\u2028", "b", "  \u2029"});
}

TEST_CASE("gpt-2 pre-tokenizer keeps invalid bytes and covers the input") {
  CHECK(split("ab\xff\xfe cd") == std::vector<std::string>{"ab", "\xff\xfe", " cd"});
  CHECK(split("\xe2\x82 x") == std::vector<std::string>{"\xe2\x82", " x"});
  uint32_t state = 7;
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s;
    const int n = static_cast<int>(state % 24);
    for (int k = 0; k < n; ++k) {
      state = state * 1664525u + 1013904223u;
      s += static_cast<char>(state >> 24);
    }
    std::string joined;
    for (auto w : pretokenize_gpt2(s)) {
      CHECK(!w.empty());
      joined += w;
    }
    CHECK(joined == s);
  }
}

TEST_CASE("unicode classes and utf-8 decoding") {
  CHECK(unicode_is_letter('a'));
  CHECK(unicode_is_letter(0x3A9));   // Omega
  CHECK(unicode_is_letter(0x4E2D));  // CJK
  CHECK(!unicode_is_letter('1'));
  CHECK(unicode_is_number(0x663));  // Arabic-Indic three
  CHECK(unicode_is_number(0xBD));   // vulgar fraction one half
  CHECK(unicode_is_whitespace(0x3000));
  CHECK(unicode_is_whitespace(0x85));
  CHECK(!unicode_is_whitespace(0x200B));       // zero width space is not White_Space
  CHECK(!utf8_next("\xc0\x80", 0).valid);      // overlong
  CHECK(!utf8_next("\xed\xa0\x80", 0).valid);  // surrogate
  CHECK(!utf8_next("\xf4\x90\x80\x80", 0).valid);
  CHECK(utf8_next("\xf0\x9f\x91\x8b", 0).cp == 0x1F44B);
  CHECK(utf8_is_incomplete("\xf0\x9f", 0));
  CHECK(!utf8_is_incomplete("\xf0\x20", 0));
  for (int b = 0; b < 256; ++b) {
    CHECK(gpt2_codepoint_to_byte(gpt2_byte_to_codepoint(static_cast<uint8_t>(b))) == b);
  }
  CHECK(gpt2_byte_to_codepoint(' ') == 0x120);   // 'Ġ'
  CHECK(gpt2_byte_to_codepoint('\n') == 0x10A);  // 'Ċ'
  CHECK(gpt2_byte_to_codepoint('a') == 'a');
}

namespace {

std::vector<std::string> split3(const std::string& s, size_t digits) {
  std::vector<std::string> out;
  for (auto w : pretokenize_llama3(s, digits)) out.emplace_back(w);
  return out;
}

}  // namespace

TEST_CASE("llama3 and qwen2 pre-tokenizers match their regexes on known cases") {
  using V = std::vector<std::string>;
  CHECK(split3("Hello world's  12345 foo\n\n  bar", 3) ==
        V{"Hello", " world", "'s", " ", " ", "123", "45", " foo", "\n\n", " ", " bar"});
  CHECK(split3("Hello world's  12345 foo\n\n  bar", 1) ==
        V{"Hello", " world", "'s", " ", " ", "1", "2", "3", "4", "5", " foo", "\n\n", " ", " bar"});
  CHECK(split3("I'M DON'T we'Ve", 3) == V{"I", "'M", " DON", "'T", " we", "'Ve"});
  CHECK(split3("x = (a+b);\r\n\tif y:\n    return", 3) ==
        V{"x", " =", " (", "a", "+b", ");\r\n", "\tif", " y", ":\n", "   ", " return"});
  CHECK(split3("na\u00efve caf\u00e9 \U0001F44B\U0001F3FD!!\n", 3) ==
        V{"na\u00efve", " caf\u00e9", " \U0001F44B\U0001F3FD!!\n"});
  CHECK(split3("$100.50  \n \n", 3) == V{"$", "100", ".", "50", "  \n \n"});
  CHECK(split3("$100.50  \n \n", 1) == V{"$", "1", "0", "0", ".", "5", "0", "  \n \n"});
  std::string joined;
  for (auto w : pretokenize_llama3("a\xff\xfe b\xc3", 3)) joined += w;
  CHECK(joined == "a\xff\xfe b\xc3");
}
