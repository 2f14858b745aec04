#include <doctest/doctest.h>

#include <algorithm>

#include <random>

#include "common/error.hpp"
#include "tokenizer_fixtures.hpp"

using namespace specd;
using test::id_of;

namespace {

const std::string kSp = "\xe2\x96\x81";

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == ' ' ? kSp : std::string(1, c);
  return out;
}

// Straightforward SentencePiece merging: repeatedly merge the adjacent pair whose
// concatenation is a token with the highest score (leftmost on ties).
std::vector<int32_t> reference_spm(const Tokenizer& tok, const std::string& text) {
  std::vector<std::string> sym;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_next(text, pos).len;
    sym.push_back(text.substr(pos, len));
    pos += len;
  }
  auto lookup = [&](const std::string& s) {
    const int32_t id = id_of(tok, s);
    return id >= 0 && tok.token_type(id) == TokenType::kNormal ? id : -1;
  };
  while (true) {
    int best = -1;
    float best_score = 0;
    for (size_t k = 0; k + 1 < sym.size(); ++k) {
      const int32_t id = lookup(sym[k] + sym[k + 1]);
      if (id >= 0 && (best < 0 || tok.token_score(id) > best_score)) {
        best = static_cast<int>(k);
        best_score = tok.token_score(id);
      }
    }
    if (best < 0) break;
    sym[best] += sym[best + 1];
    sym.erase(sym.begin() + best + 1);
  }
  std::vector<int32_t> out;
  for (const auto& s : sym) {
    const int32_t id = lookup(s);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (unsigned char c : s) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", c);
      out.push_back(id_of(tok, name));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("spm vocabulary loads with llama.cpp defaults") {
  const Tokenizer tok = test::load(test::write_spm("spm.gguf"));
  CHECK(tok.model() == TokenizerModel::kSpm);
  CHECK(tok.add_bos());
  CHECK(!tok.add_eos());
  CHECK(tok.add_space_prefix());
  CHECK(tok.bos_id() == 1);
  CHECK(tok.eos_id() == 2);
  CHECK(tok.unk_id() == 0);
}

TEST_CASE("spm defaults special ids when keys are absent") {
  const std::string path = test::tok_scratch("spm_nokeys.gguf");
  const test::SpmSpec s = test::spm_spec();
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", GgufValue::string_array(s.tokens));
  w.set("tokenizer.ggml.scores", GgufValue::float32_array(s.scores));
  w.set("tokenizer.ggml.token_type", GgufValue::int32_array(s.types));
  w.set_bool("tokenizer.ggml.add_space_prefix", false);
  w.write(path);
  const Tokenizer tok = test::load(path);
  CHECK(tok.bos_id() == 1);
  CHECK(tok.eos_id() == 2);
  CHECK(tok.unk_id() == 0);
  CHECK(!tok.add_space_prefix());
  CHECK(tok.encode("hello", false) ==
        std::vector<int32_t>{id_of(tok, "h"), id_of(tok, "e"), id_of(tok, "ll"), id_of(tok, "o")});
}

TEST_CASE("spm encodes known answers by score") {
  const Tokenizer tok = test::load(test::write_spm("spm.gguf"));
  using V = std::vector<int32_t>;
  CHECK(tok.encode("hello world") == V{1, id_of(tok, kSp + "hello"), id_of(tok, kSp + "world")});
  CHECK(tok.encode("hello world", false) ==
        V{id_of(tok, kSp + "hello"), id_of(tok, kSp + "world")});
  // No token for "é": byte fallback.
  CHECK(tok.encode("h\xc3\xa9", false) ==
        V{id_of(tok, kSp + "h"), id_of(tok, "<0xC3>"), id_of(tok, "<0xA9>")});
  // "ab" and "ba" tie: the leftmost pair merges first.
  CHECK(tok.encode("aba", false) == V{id_of(tok, kSp), id_of(tok, "ab"), id_of(tok, "a")});
  CHECK(tok.encode("") == V{1});
  CHECK(tok.encode("", false).empty());
}

TEST_CASE("spm matches a reference implementation and round trips") {
  const Tokenizer tok = test::load(test::write_spm("spm.gguf"));
  const std::vector<std::string> alphabet = {"h", "e", "l", "o",        "w",  "r", "d",
                                             "a", "b", " ", "\xc3\xa9", "\n", "z", "\xe4\xb8\xad"};
  std::mt19937 rng(17);
  for (int iter = 0; iter < 1500; ++iter) {
    const std::string s = test::random_text(rng, alphabet, 16);
    CAPTURE(s);
    const auto ids = tok.encode(s, false);
    CHECK(ids == (s.empty() ? std::vector<int32_t>{} : reference_spm(tok, escape(" " + s))));
    CHECK(tok.decode(ids) == s);
  }
  for (int iter = 0; iter < 1000; ++iter) {
    std::string s;
    const size_t n = rng() % 24;
    for (size_t k = 0; k < n; ++k) {
      char c = static_cast<char>(rng() & 0xff);
      // U+2581 in the input would come back as a space; keep its lead byte out.
      if (static_cast<unsigned char>(c) == 0xe2) c = 'x';
      s += c;
    }
    if (tok.decode(tok.encode(s)) != s)
      FAIL("round trip failed for a " << s.size() << "-byte string");
  }
}

TEST_CASE("spm special tokens") {
  const Tokenizer tok = test::load(test::write_spm("spm.gguf"));
  const auto plain = tok.encode("<s>hello</s>", false);
  for (int32_t id : plain) CHECK(!tok.is_control(id));
  CHECK(tok.decode(plain) == "<s>hello</s>");
  const auto parsed = tok.encode("<s>hello</s>", false, true);
  CHECK(parsed == std::vector<int32_t>{1, id_of(tok, kSp + "hello"), 2});
  CHECK(tok.decode(parsed) == "hello");
  CHECK(tok.decode(parsed, true) == "<s> hello</s>");
  const auto user = tok.encode("ab<user>ab", false);
  CHECK(user == std::vector<int32_t>{id_of(tok, kSp), id_of(tok, "ab"), id_of(tok, "<user>"),
                                     id_of(tok, kSp), id_of(tok, "ab")});
  CHECK(tok.token_to_piece(id_of(tok, "<0x41>")) == "A");
  CHECK(tok.token_to_piece(0).empty());
  CHECK(tok.token_to_piece(0, true) == "<unk>");
  CHECK_THROWS_AS(tok.token_to_piece(-1), Error);
  CHECK_THROWS_AS(tok.token_to_piece(tok.n_tokens()), Error);
}

TEST_CASE("spm without byte tokens falls back to the unknown token") {
  const std::string path = test::tok_scratch("spm_nobytes.gguf");
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens",
        GgufValue::string_array({"<unk>", "<s>", "</s>", "\xe2\x96\x81", "a",
                                 "\xe2\x96\x81"
                                 "a"}));
  w.set("tokenizer.ggml.scores", GgufValue::float32_array({0, 0, 0, -1, -1, -0.5f}));
  w.set("tokenizer.ggml.token_type", GgufValue::int32_array({2, 3, 3, 1, 1, 1}));
  w.write(path);
  const Tokenizer tok = test::load(path);
  CHECK(tok.encode("a\xc3\xa9"
                   "a") == std::vector<int32_t>{1, 5, 0, 0, 4});
  CHECK(tok.decode(tok.encode("a a")) == "a a");
}

TEST_CASE("spm: two pieces spelled alike are refused, naming the file and both ids") {
  // A copy of "ab" (a normal piece) and of <0x41> (a byte piece) at the end: a prompt's
  // "ab" or byte 0x41 would silently have become the copy's id.
  for (const std::string& copied : {std::string("ab"), std::string("<0x41>")}) {
    CAPTURE(copied);
    const std::string path = test::write_spm("spm_dup.gguf", [&](GgufWriter& w) {
      test::SpmSpec s = test::spm_spec();
      const auto at = std::find(s.tokens.begin(), s.tokens.end(), copied) - s.tokens.begin();
      s.tokens.push_back(copied);
      s.scores.push_back(-1);
      s.types.push_back(s.types[static_cast<size_t>(at)]);
      w.set("tokenizer.ggml.tokens", GgufValue::string_array(s.tokens));
      w.set("tokenizer.ggml.scores", GgufValue::float32_array(s.scores));
      w.set("tokenizer.ggml.token_type", GgufValue::int32_array(s.types));
    });
    CHECK_THROWS_WITH_AS(test::load(path), doctest::Contains((path + ": tokens ").c_str()), Error);
    CHECK_THROWS_WITH_AS(test::load(path), doctest::Contains(("are both '" + copied + "'").c_str()),
                         Error);
  }
}
