// The token mask from the trie walk equals checking every token on its own, on real
// vocabularies (../shared/compat/vocab), at every point of a JSON text and mid-character.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf_reader.hpp"
#include "grammar/grammar_matcher.hpp"
#include "grammar/json_schema_grammar.hpp"
#include "grammar/token_constraint.hpp"
#include "grammar/token_trie.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"
#include "tokenizer/tokenizer.hpp"

namespace specd {
namespace {

std::filesystem::path vocab_file(const std::string& name) {
  return std::filesystem::path(SPECD_SOURCE_DIR) / ".." / "shared" / "compat" / "vocab" /
         ("ggml-vocab-" + name + ".gguf");
}

// The llama-spm vocabulary of the shared compat data; nullopt when it is missing (the test
// then reports itself skipped).
std::optional<Tokenizer> llama_spm() {
  const auto path = vocab_file("llama-spm");
  if (!std::filesystem::exists(path)) {
    ::specd::test::skip_missing(path, " is missing");
    return std::nullopt;
  }
  return Tokenizer::from_gguf(GgufFile::open(path.string()));
}

std::vector<uint8_t> brute_force(GrammarMatcher& m, const GrammarState& s, const TokenTrie& trie) {
  std::vector<uint8_t> allowed(trie.vocab(), 0);
  for (uint32_t t = 0; t < trie.vocab(); ++t) {
    if (trie.piece(static_cast<int32_t>(t)).empty()) continue;
    GrammarState copy = s;
    allowed[t] = m.advance(copy, trie.piece(static_cast<int32_t>(t))) ? 1 : 0;
  }
  return allowed;
}

}  // namespace

TEST_CASE("token mask: the trie walk equals token-by-token checks on real vocabularies" *
          SPECD_MAY_SKIP) {
  const std::string gbnf = json_object_gbnf();
  const Grammar g = parse_gbnf(gbnf);
  for (const char* name : {"llama-spm", "gpt-2"}) {
    CAPTURE(name);
    const auto path = vocab_file(name);
    if (!std::filesystem::exists(path)) {
      ::specd::test::skip_missing(path, " is missing");
      continue;
    }
    const Tokenizer tok = Tokenizer::from_gguf(GgufFile::open(path.string()));
    const TokenTrie trie(tok);
    GrammarMatcher m(g);
    GrammarState s = m.initial();
    // Every prefix of the text, byte by byte (so mid-character states too: é is two bytes).
    const std::string text = "{\"caf\xC3\xA9\": [1.5, \"x\\u0041\"], \"b\": true}";
    size_t masked_out = 0;
    for (size_t i = 0; i <= text.size(); ++i) {
      CAPTURE(i);
      std::vector<uint8_t> walked;
      const bool any = m.allowed_tokens(s, trie, walked);
      const std::vector<uint8_t> expected = brute_force(m, s, trie);
      CHECK(walked == expected);
      CHECK(any == (std::find(expected.begin(), expected.end(), 1) != expected.end()));
      masked_out += static_cast<size_t>(std::count(walked.begin(), walked.end(), 0));
      if (i < text.size()) REQUIRE(m.advance(s, text.substr(i, 1)));
    }
    CHECK(GrammarMatcher::can_end(s));
    CHECK(masked_out > 0);
  }
}

TEST_CASE("token constraint: end of sequence only when complete, control tokens never" *
          SPECD_MAY_SKIP) {
  const std::optional<Tokenizer> spm = llama_spm();
  if (!spm) return;
  const Tokenizer& tok = *spm;
  TokenConstraint c("root ::= \" \"? ( \"yes\" | \"no\" )", tok);
  const int32_t eos = tok.eos_id(), bos = tok.bos_id();
  std::vector<float> logits(static_cast<size_t>(tok.n_tokens()), 0.f);
  REQUIRE(c.apply(logits, {}) == TokenConstraint::Row::kMasked);
  CHECK(std::isinf(logits[static_cast<size_t>(eos)]));
  CHECK(std::isinf(logits[static_cast<size_t>(bos)]));
  const std::vector<int32_t> yes = tok.encode("yes", false);
  CHECK(logits[static_cast<size_t>(yes[0])] == 0.f);
  CHECK(std::isinf(logits[static_cast<size_t>(tok.encode("maybe", false)[0])]));
  // After the whole word: only the end.
  std::fill(logits.begin(), logits.end(), 1.f);
  REQUIRE(c.apply(logits, yes) == TokenConstraint::Row::kMasked);
  CHECK(logits[static_cast<size_t>(eos)] == 1.f);
  CHECK(std::count_if(logits.begin(), logits.end(), [](float x) { return !std::isinf(x); }) == 1);
  // A path the grammar refuses: the row is unreachable and left alone.
  std::fill(logits.begin(), logits.end(), 2.f);
  CHECK(c.apply(logits, tok.encode("maybe", false)) == TokenConstraint::Row::kUnreachable);
  CHECK(logits[0] == 2.f);
  for (int32_t t : yes) c.commit(t);
  CHECK(c.complete());
  CHECK_THROWS_AS(c.commit(tok.encode("x", false)[0]), Error);
  // A character no token spells: the row is dead.
  TokenConstraint dead("root ::= \"\\U0010FFFD\"", tok);
  std::fill(logits.begin(), logits.end(), 0.f);
  const bool byte_fallback = tok.encode("\xF4\x8F\xBF\xBD", false).size() > 1;
  if (!byte_fallback) CHECK(dead.apply(logits, {}) == TokenConstraint::Row::kDead);
}

TEST_CASE("token constraint: a mask that failed is not remembered as an empty one" *
          SPECD_MAY_SKIP) {
  const std::optional<Tokenizer> spm = llama_spm();
  if (!spm) return;
  const Tokenizer& tok = *spm;
  // Every "(" may close with ")" or "]": masking after ten of them walks tokens that
  // keep tens of thousands of parses alive, past the matcher's bound.
  TokenConstraint c("root ::= e\ne ::= \"(\" e \")\" | \"(\" e \"]\" | \"((((((((((((((((((((x\"",
                    tok);
  std::vector<float> logits(static_cast<size_t>(tok.n_tokens()), 0.f);
  int32_t paren = -1;
  for (int32_t t = 0; t < tok.n_tokens() && paren < 0; ++t)
    if (tok.token_to_piece(t) == "(") paren = t;
  REQUIRE(paren >= 0);
  const std::vector<int32_t> opened(10, paren);
  CHECK_THROWS_AS(c.apply(logits, opened), GrammarError);
  // The same row again (a draft model's mask, then the target's): the same error, not a row
  // that no token can continue.
  CHECK_THROWS_AS(c.apply(logits, opened), GrammarError);
}

TEST_CASE("token mask: the cost of a row on a 32000-token vocabulary (reported)") {
  const auto path = vocab_file("llama-spm");
  if (!std::filesystem::exists(path)) return;
  const Tokenizer tok = Tokenizer::from_gguf(GgufFile::open(path.string()));
  const auto t0 = std::chrono::steady_clock::now();
  const TokenTrie trie(tok);
  const auto t1 = std::chrono::steady_clock::now();
  const Grammar g = parse_gbnf(json_object_gbnf());
  GrammarMatcher m(g);
  GrammarState s = m.initial();
  REQUIRE(m.advance(s, "{\"text\": \"ab"));  // inside a string: most tokens are allowed
  std::vector<uint8_t> allowed;
  const int reps = 20;
  for (int i = 0; i < reps; ++i) m.allowed_tokens(s, trie, allowed);
  const auto t2 = std::chrono::steady_clock::now();
  MESSAGE("trie build " << std::chrono::duration<double, std::milli>(t1 - t0).count()
                        << " ms; one row's mask inside a JSON string "
                        << std::chrono::duration<double, std::milli>(t2 - t1).count() / reps
                        << " ms, " << m.work_done() << " units of work; allowed "
                        << std::count(allowed.begin(), allowed.end(), 1) << " of "
                        << allowed.size());
  CHECK(std::count(allowed.begin(), allowed.end(), 1) > 20000);
  // An ordinary grammar's row stays far inside the budget that refuses ambiguous ones.
  CHECK(m.work_done() < GrammarMatcher::kDefaultMaxWork / 20);
}

}  // namespace specd
