// The pattern matcher behind llama.cpp's pre-tokenizers, and the pre-tokenizer families that
// have no llama.cpp case files here (cases written from llama.cpp's pattern lists).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "gguf/gguf_reader.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"
#include "tokenizer/pretokenizer.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace specd;
using V = std::vector<std::string>;

namespace {

V split(const SplitPattern& p, const std::string& s) {
  std::vector<std::string_view> pieces;
  p.split(s, pieces);
  return V(pieces.begin(), pieces.end());
}

V split(const char* pattern, const std::string& s) {
  return split(SplitPattern(pattern), s);
}

V words(PreTokenizer type, const std::string& s) {
  V out;
  for (auto w : WordSplitter(type).split(s)) out.emplace_back(w);
  return out;
}

V as_strings(const std::vector<std::string_view>& v) {
  return V(v.begin(), v.end());
}

// Random text over the characters the patterns care about: ASCII letters (apostrophes before
// s/t/re/ve/m/ll/d included), digits, spaces, tabs, CR/LF, punctuation, non-ASCII letters,
// digits and spaces, CJK, emoji, a combining mark and invalid bytes.
std::string random_text(std::mt19937& rng) {
  static const V kPieces = {"a",    "Z",      "s",      "t",      "re",       "ve",   "m",     "ll",
                            "d",    "'",      "'S",     "'LL",    "0",        "7",    "12345", " ",
                            " ",    "  ",     "\t",     "\n",     "\r",       "\r\n", ",",     "!",
                            "$",    "+",      "<",      "`",      "~",        "|",    "_",     "é",
                            "Ω",    "٣",      "½",      "\u00a0", "\u3000",   "你",   "好",    "가",
                            "🦙", "\u0301", "\u2028", "\xff",   "\xe2\x82", "。",   "！"};
  std::uniform_int_distribution<size_t> len(0, 14), pick(0, kPieces.size() - 1);
  std::string s;
  for (size_t n = len(rng); n > 0; --n) s += kPieces[pick(rng)];
  return s;
}

}  // namespace

TEST_CASE("split pattern: ECMAScript matching of the supported syntax") {
  CHECK(split("\\p{N}", "ab12c3") == V{"ab", "1", "2", "c", "3"});
  CHECK(split("[0-9][0-9][0-9]", "12345678") == V{"123", "456", "78"});
  CHECK(split("\\p{N}{1,3}", "12345 6") == V{"123", "45", " ", "6"});
  CHECK(split("\\s+(?!\\S)", "a   b  ") == V{"a", "  ", " b", "  "});
  CHECK(split("\\s+$", " a  b  ") == V{" a  b", "  "});
  CHECK(split("x(?=y)", "xxyx") == V{"x", "x", "yx"});
  CHECK(split("(?:ab|a)c", "abcacab") == V{"abc", "ac", "ab"});
  CHECK(split("a|ab", "ab") == V{"a", "b"});  // alternatives in order, not longest
  CHECK(split("[^\\s\\p{L}]+", "ab, cd!?") == V{"ab", ",", " cd", "!?"});
  CHECK(split("[\\p{P}\\$\\+<=>\\^~\\|`]+", "a+b=>c`d") == V{"a", "+", "b", "=>", "c", "`", "d"});
  CHECK(split("\\s?\\p{P}+", "a .,b") == V{"a", " .,", "b"});
  CHECK(split("[a-c-]+", "x-ab-y") == V{"x", "-ab-", "y"});
  CHECK(split("\\d+", "a١23") == V{"a١", "23"});  // \d is ASCII only
  CHECK(split("\\p{M}+", "e\u0301") == V{"e", "\u0301"});
  CHECK(split("\\p{S}", "a$b") == V{"a", "$", "b"});
  CHECK(split("\\p{L}+", "").empty());
}

TEST_CASE("split pattern: whitespace outside ASCII matches \\s but no literal, like llama.cpp") {
  CHECK(split("[　-。]+", "\u3000。x") == V{"\u3000", "。", "x"});
  CHECK(split("\\s+", "a\u3000\u00a0b") == V{"a", "\u3000\u00a0", "b"});
  CHECK(split("[^\\s]+", "a\u2028b") == V{"a", "\u2028", "b"});
  // An invalid byte is U+FFFD there: a symbol, never a letter, digit or space.
  CHECK(split("\\p{S}+", "a\xff\xfe b") == V{"a", "\xff\xfe", " b"});
}

TEST_CASE("split pattern: unsupported syntax is refused naming the pattern") {
  for (const char* bad : {"a(?<=b)", "\\p{Han}+", "a+?", "(a", "a)", "[ab", "\\bword", "a*",
                          "(?:a|)", "\\1", "a{3,1}", ".+"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(SplitPattern{bad}, doctest::Contains(bad), Error);
  }
}

TEST_CASE("split pattern: agrees with the hand-written gpt-2 and llama3 splitters") {
  const SplitPattern gpt2(pre_tokenizer_patterns(PreTokenizer::kGpt2).at(0));
  const SplitPattern llama3(pre_tokenizer_patterns(PreTokenizer::kLlama3).at(0));
  const SplitPattern qwen2(pre_tokenizer_patterns(PreTokenizer::kQwen2).at(0));
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    const std::string s = random_text(rng);
    CAPTURE(s);
    REQUIRE(split(gpt2, s) == as_strings(pretokenize_gpt2(s)));
    REQUIRE(split(llama3, s) == as_strings(pretokenize_llama3(s, 3)));
    REQUIRE(split(qwen2, s) == as_strings(pretokenize_llama3(s, 1)));
  }
}

TEST_CASE("every pre-tokenizer covers any bytes with non-empty words") {
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> byte(0, 255), coin(0, 3);
  for (PreTokenizer t :
       {PreTokenizer::kDefault, PreTokenizer::kGpt2, PreTokenizer::kLlama3, PreTokenizer::kQwen2,
        PreTokenizer::kDeepseekLlm, PreTokenizer::kDeepseekCoder, PreTokenizer::kFalcon,
        PreTokenizer::kStarcoder}) {
    const WordSplitter splitter(t);
    for (int iter = 0; iter < 300; ++iter) {
      // Half random bytes, half the structured text above.
      std::string s = coin(rng) < 2 ? random_text(rng) : std::string();
      for (int n = coin(rng) * 6; n > 0; --n) s += static_cast<char>(byte(rng));
      std::string joined;
      for (auto w : splitter.split(s)) {
        CHECK(!w.empty());
        joined += w;
      }
      CHECK(joined == s);
    }
  }
}

TEST_CASE("pre-tokenizer names map as in llama.cpp") {
  struct Case {
    const char* name;
    PreTokenizer type;
    bool ignore_merges;
    bool add_bos;
  };
  for (const Case& c : {Case{"default", PreTokenizer::kDefault, false, false},
                        Case{"gpt-2", PreTokenizer::kGpt2, false, false},
                        Case{"mpt", PreTokenizer::kGpt2, false, false},
                        Case{"llama3", PreTokenizer::kLlama3, true, true},
                        Case{"llama-bpe", PreTokenizer::kLlama3, true, true},
                        Case{"dbrx", PreTokenizer::kLlama3, false, false},
                        Case{"qwen2", PreTokenizer::kQwen2, false, false},
                        Case{"deepseek-llm", PreTokenizer::kDeepseekLlm, false, false},
                        Case{"deepseek-coder", PreTokenizer::kDeepseekCoder, false, false},
                        Case{"falcon", PreTokenizer::kFalcon, false, false},
                        Case{"starcoder", PreTokenizer::kStarcoder, false, false},
                        Case{"refact", PreTokenizer::kStarcoder, false, false},
                        Case{"command-r", PreTokenizer::kStarcoder, false, false},
                        Case{"smollm", PreTokenizer::kStarcoder, false, false}}) {
    CAPTURE(c.name);
    const auto info = pre_tokenizer_from_name(c.name);
    REQUIRE(info.has_value());
    CHECK(info->type == c.type);
    CHECK(info->ignore_merges == c.ignore_merges);
    CHECK(info->add_bos == c.add_bos);
  }
  CHECK(!pre_tokenizer_from_name("mystery").has_value());
  // docs/ADDING_AN_ARCHITECTURE.md ("Tokenizers") lists every accepted name.
  std::ifstream in(std::string(SPECD_SOURCE_DIR) + "/docs/ADDING_AN_ARCHITECTURE.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string names = pre_tokenizer_names();
  for (size_t pos = 0; pos < names.size();) {
    size_t end = names.find(", ", pos);
    if (end == std::string::npos) end = names.size();
    std::string quoted = "`";
    quoted.append(names, pos, end - pos);
    quoted += '`';
    CAPTURE(quoted);
    CHECK(readme.find(quoted) != std::string::npos);
    pos = end + 2;
  }
  CHECK(!pre_tokenizer_from_name("").has_value());
}

// Expected words worked out by hand from llama.cpp's pattern lists for each family.
TEST_CASE("pre-tokenizer families split as their llama.cpp pattern lists") {
  // default: [\p{P}\$\+<=>\^~\|]+, then GPT-2's pattern, then \p{N}+, then [0-9]{3}.
  CHECK(words(PreTokenizer::kDefault, "Hello, world! 1234567 $x+=y's") ==
        V{"Hello", ",", " world", "!", " ", "123", "456", "7", " ", "$", "x", "+=", "y", "'", "s"});
  // mpt = gpt-2: GPT-2's pattern alone.
  CHECK(words(PreTokenizer::kGpt2, "Hello  world\n\n") == V{"Hello", " ", " world", "\n\n"});
  // starcoder, refact, command-r, smollm: single digits, then GPT-2's pattern.
  CHECK(words(PreTokenizer::kStarcoder, "x = 42;\n  foo's") ==
        V{"x", " =", " ", "4", "2", ";", "\n ", " foo", "'s"});
  // llama3 / llama-bpe: case-insensitive contractions, 1-3 digits, punctuation with newlines.
  CHECK(words(PreTokenizer::kLlama3, "I'M 12345 ok!!\n\n  x") ==
        V{"I", "'M", " ", "123", "45", " ok", "!!\n\n", " ", " x"});
  // qwen2: the same with single digits.
  CHECK(words(PreTokenizer::kQwen2, "I'M 12345 ok!!\n\n  x") ==
        V{"I", "'M", " ", "1", "2", "3", "4", "5", " ok", "!!\n\n", " ", " x"});
  // deepseek-llm: newlines alone, letter ranges, ASCII/fullwidth punctuation, trailing
  // spaces, CJK runs, number runs.
  CHECK(words(PreTokenizer::kDeepseekLlm, "Hello world, 你好 123\n") ==
        V{"Hello", " world", ",", " ", "你好", " ", "123", "\n"});
  CHECK(words(PreTokenizer::kDeepseekLlm, "ｈｉ！ ok  ") == V{"ｈｉ", "！", " ok", "  "});
  // Letters of its list that Unicode normalization would rewrite (Kelvin sign, Greek oxia
  // forms, Ohm sign) are letters of its letter pattern; its CJK pattern (U+0800-U+4E00
  // included) then splits them off again.
  const SplitPattern deepseek_letters(pre_tokenizer_patterns(PreTokenizer::kDeepseekLlm).at(1));
  const std::string odd = "\u00e9\u212A\u1F7D\u1FD3\u1FDB\u2126\u1FBE";
  CHECK(split(deepseek_letters, odd) == V{odd});
  CHECK(words(PreTokenizer::kDeepseekLlm, odd) == V{"\u00e9", odd.substr(2)});
  // deepseek-coder: single digits, letters and punctuation runs with one leading space.
  // ('=' is a symbol, not punctuation, and \s? takes a tab.)
  CHECK(words(PreTokenizer::kDeepseekCoder, "if (x1 == 23):\n\tgo") ==
        V{"if", " (", "x", "1", " == ", "2", "3", "):", "\n", "\tgo"});
  // Long runs stay linear: \\s+$ failing inside a run of 200000 spaces.
  const std::string spaces(200000, ' ');
  CHECK(words(PreTokenizer::kDeepseekLlm, spaces + "你") == V{spaces, "你"});
  CHECK(words(PreTokenizer::kDeepseekLlm, spaces + "x") == V{spaces.substr(1), " x"});
  CHECK(words(PreTokenizer::kNone, "a b") == V{"a b"});
  for (PreTokenizer t : {PreTokenizer::kDefault, PreTokenizer::kDeepseekLlm,
                         PreTokenizer::kDeepseekCoder, PreTokenizer::kFalcon}) {
    CHECK(words(t, "").empty());
  }
}

TEST_CASE("bpe vocabulary without tokenizer.ggml.pre uses llama.cpp's default pre-tokenizer" *
          SPECD_MAY_SKIP) {
  const auto gguf = std::filesystem::path(SPECD_SOURCE_DIR) / ".." / "shared" / "compat" / "vocab" /
                    "ggml-vocab-gpt-neox.gguf";
  if (!std::filesystem::exists(gguf)) {
    ::specd::test::skip_missing(gguf.string(), " is missing (llama.cpp reference data)");
    return;
  }
  const Tokenizer tok = Tokenizer::from_gguf(GgufFile::open(gguf.string()));
  CHECK(tok.pre_tokenizer_name().empty());
  CHECK(tok.pre_tokenizer() == PreTokenizer::kDefault);
  // Digits go in threes and punctuation runs stand alone, unlike GPT-2's pattern.
  auto cat = [&](std::initializer_list<const char*> parts) {
    std::vector<int32_t> out;
    for (const char* p : parts) {
      const auto ids = tok.encode(p, false);
      out.insert(out.end(), ids.begin(), ids.end());
    }
    return out;
  };
  CHECK(tok.encode("1234567", false) == cat({"123", "456", "7"}));
  CHECK(tok.encode("a.b,,c", false) == cat({"a", ".", "b", ",,", "c"}));
  CHECK(tok.decode(tok.encode("Hello, world 1234567!", false)) == "Hello, world 1234567!");
}
