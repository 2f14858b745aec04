// GBNF: parsing (and its errors, with line and column) and matching texts byte by byte.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "grammar/gbnf_grammar.hpp"
#include "grammar/grammar_matcher.hpp"
#include "grammar/token_trie.hpp"

namespace specd {
namespace {

enum class Match { kComplete, kPrefix, kNo };

Match match(const std::string& gbnf, const std::string& text) {
  const Grammar g = parse_gbnf(gbnf);
  GrammarMatcher m(g);
  GrammarState s = m.initial();
  if (!m.advance(s, text)) return Match::kNo;
  return GrammarMatcher::can_end(s) ? Match::kComplete : Match::kPrefix;
}

std::string error_of(const std::string& gbnf) {
  try {
    parse_gbnf(gbnf);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("gbnf: literals, sequences, alternatives and rule references") {
  const std::string g =
      "root ::= greeting \" \" name\ngreeting ::= \"hi\" | \"hello\"\n"
      "name ::= [A-Z] [a-z]*\n";
  CHECK(match(g, "hi Bob") == Match::kComplete);
  CHECK(match(g, "hello Al") == Match::kComplete);
  CHECK(match(g, "hel") == Match::kPrefix);
  CHECK(match(g, "hi bob") == Match::kNo);
  CHECK(match(g, "hey") == Match::kNo);
  CHECK(match(g, "hi B0") == Match::kNo);
}

TEST_CASE("gbnf: repetition operators and bounds") {
  CHECK(match("root ::= \"a\"+", "") == Match::kPrefix);
  CHECK(match("root ::= \"a\"+", "aaa") == Match::kComplete);
  CHECK(match("root ::= \"a\"*", "") == Match::kComplete);
  CHECK(match("root ::= \"a\"? \"b\"", "b") == Match::kComplete);
  CHECK(match("root ::= \"a\"? \"b\"", "ab") == Match::kComplete);
  CHECK(match("root ::= \"a\"? \"b\"", "aab") == Match::kNo);
  const std::string bounded = "root ::= [0-9]{2,4}";
  CHECK(match(bounded, "1") == Match::kPrefix);
  CHECK(match(bounded, "12") == Match::kComplete);
  CHECK(match(bounded, "1234") == Match::kComplete);
  CHECK(match(bounded, "12345") == Match::kNo);
  CHECK(match("root ::= \"x\"{3}", "xxx") == Match::kComplete);
  CHECK(match("root ::= \"x\"{3}", "xx") == Match::kPrefix);
  CHECK(match("root ::= \"x\"{3}", "xxxx") == Match::kNo);
  CHECK(match("root ::= \"x\"{2,}", "xxxxxxxx") == Match::kComplete);
  CHECK(match("root ::= \"x\"{,2}", "") == Match::kComplete);
  CHECK(match("root ::= \"x\"{,2}", "xxx") == Match::kNo);
  CHECK(match("root ::= (\"ab\" | \"c\")+ \"!\"", "abcab!") == Match::kComplete);
}

TEST_CASE("gbnf: classes, negation, any character, escapes and Unicode") {
  CHECK(match("root ::= [^a-c]", "d") == Match::kComplete);
  CHECK(match("root ::= [^a-c]", "b") == Match::kNo);
  CHECK(match("root ::= .", "\xC3\xA9") == Match::kComplete);  // é
  CHECK(match("root ::= [à-ü]+", "\xC3\xA9\xC3\xBC") == Match::kComplete);
  CHECK(match("root ::= [à-ü]+", "\xC3") == Match::kPrefix);  // é's first byte could continue
  CHECK(match("root ::= [à-ü]+", "\xC2") == Match::kNo);      // U+0080..U+00BF: none is
  CHECK(match("root ::= \"\\x41\\u00e9\\n\\t\\\"\"", "A\xC3\xA9\n\t\"") == Match::kComplete);
  CHECK(match("root ::= \"日本\"", "日本") == Match::kComplete);
  CHECK(match("root ::= \"日本\"", "日") == Match::kPrefix);
  CHECK(match("root ::= [a-z]", "\xFF") == Match::kNo);  // never UTF-8
  // Overlong forms of '{' and a surrogate spell no character, whole or begun.
  CHECK(match("root ::= \"{\"", "\xC1\xBB") == Match::kNo);
  CHECK(match("root ::= \"{\"", "\xE0\x81\xBB") == Match::kNo);
  CHECK(match("root ::= \"{\"", "\xF0\x80\x81\xBB") == Match::kNo);
  CHECK(match("root ::= \"{\"", "\xF0\x80") == Match::kNo);
  CHECK(match("root ::= .", "\xED\xA0\x80") == Match::kNo);
  CHECK(match("root ::= .", "\xED\xA0") == Match::kNo);
  CHECK(match("root ::= .", "\xED\x9F") == Match::kPrefix);
  CHECK(match("root ::= .", "\xF4\x90") == Match::kNo);  // above U+10FFFF
  CHECK(match("root ::= [\\]\\[-]", "]") == Match::kComplete);
  CHECK(match("root ::= [\\]\\[-]", "-") == Match::kComplete);
}

TEST_CASE("gbnf: a class's ranges in any order, overlapping or negated, match as written") {
  // Ranges written out of order, overlapping, adjacent, repeated; then the same negated.
  const std::string ranges = "x-zb-da-cq-qk-mn-ot-u";
  const auto written = [](uint32_t cp) {
    return (cp >= 'a' && cp <= 'd') || (cp >= 'k' && cp <= 'o') || cp == 'q' ||
           (cp >= 't' && cp <= 'u') || (cp >= 'x' && cp <= 'z');
  };
  for (const bool negated : {false, true}) {
    CAPTURE(negated);
    const Grammar g = parse_gbnf("root ::= [" + std::string(negated ? "^" : "") + ranges + "]");
    const GrammarElement& e = g.elements[g.rule_alternatives[g.root][0]];
    for (uint32_t lo = 0; lo < 130; ++lo)
      for (uint32_t hi = lo; hi < 130; ++hi) {
        bool any = false;
        for (uint32_t cp = lo; cp <= hi; ++cp) any = any || (written(cp) != negated);
        if (lo == hi) CHECK(e.matches(lo) == any);
        CHECK(e.matches_any(lo, hi) == any);
      }
    CHECK(e.matches(0x10FFFF) == negated);
  }
  CHECK(match(R"(root ::= [^\x00-\U0010FFFF]?)", "a") == Match::kNo);
  CHECK(match("root ::= .", "\xF4\x8F\xBF\xBF") == Match::kComplete);  // U+10FFFF
}

TEST_CASE("gbnf: a negated class of many ranges written downwards stays a lookup") {
  // Each range is checked once, not once per range below it: 20,000 ranges written from the
  // top down used to make every character a 20,000-pass walk.
  std::string cls = "root ::= [^";
  for (uint32_t cp = 0x5000 + 2 * 20000; cp > 0x5000; cp -= 2) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);
    cls += buf;
  }
  cls += "]+";
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "\xE5\x80\x81";  // U+5001, between two ranges
  CHECK(match(cls, text) == Match::kComplete);
  CHECK(match(cls, "\xE5\x80\x82") == Match::kNo);  // U+5002 is one of them
}

TEST_CASE("gbnf: comments, line continuation inside groups and after |") {
  const std::string g = "# a comment\nroot ::= ( \"a\"\n  | \"b\" ) |  # trailing\n  \"c\"\n";
  CHECK(match(g, "a") == Match::kComplete);
  CHECK(match(g, "b") == Match::kComplete);
  CHECK(match(g, "c") == Match::kComplete);
}

TEST_CASE("gbnf: an ambiguous grammar keeps its parses bounded") {
  // Each character doubles the parses unless equal stacks are merged.
  const std::string g = "root ::= ( \"a\" | \"a\" | [a-z] )*";
  CHECK(match(g, std::string(200, 'a')) == Match::kComplete);
}

TEST_CASE("gbnf: a grammar that keeps thousands of parses alive fails fast, with a reason") {
  // Every "(" may close with ")" or "]": after n of them, 2^n distinct stacks are alive.
  const Grammar g = parse_gbnf("root ::= e\ne ::= \"(\" e \")\" | \"(\" e \"]\" | \"x\"");
  GrammarMatcher m(g);
  std::vector<std::string> bytes;
  for (int b = 0; b < 128; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
  const TokenTrie trie(bytes);
  const auto run = [&] {
    GrammarState s = m.initial();
    for (int i = 0; i < 13; ++i) m.advance(s, "(");
    std::vector<uint8_t> allowed;
    m.allowed_tokens(s, trie, allowed);
  };
  CHECK_THROWS_WITH_AS(run(), doctest::Contains("grammar: too ambiguous"), GrammarError);
  // A few levels are fine.
  GrammarState s = m.initial();
  CHECK(m.advance(s, "(((x)])"));
}

TEST_CASE("gbnf: a bounded repetition of a maybe-empty item costs work, within the budget") {
  // Found by fuzzing: each of the 95 nested optional levels can be skipped, so every
  // character reaches all the levels after it. The work is counted (nodes, stack levels
  // compared, the dedupe's sort) and a budget refuses the call instead of running on.
  const Grammar g = parse_gbnf("root ::= (\"ab\"? | \"a\" [b-z]){,95} \"!\"");
  std::vector<std::string> pieces;
  for (const char* p : {"a", "b", "c", "ab", "ac", "!", "ba"}) pieces.emplace_back(p);
  const TokenTrie trie(pieces);
  GrammarMatcher m(g);
  GrammarState s = m.initial();
  REQUIRE(m.advance(s, "abacab"));
  std::vector<uint8_t> allowed;
  CHECK(m.allowed_tokens(s, trie, allowed));
  const uint64_t mask_work = m.work_done();
  CHECK(mask_work > 1000);
  // After whole items only an item or the end may follow: "a", "ab", "ac", "!".
  CHECK(allowed == std::vector<uint8_t>{1, 0, 0, 1, 1, 1, 0});
  GrammarMatcher small(g, mask_work / 2);
  const GrammarState s2 = s;  // a state is plain data: any matcher of the grammar takes it
  const std::string reason = "more than " + std::to_string(mask_work / 2) + " parse steps";
  CHECK_THROWS_WITH_AS(small.allowed_tokens(s2, trie, allowed), doctest::Contains(reason.c_str()),
                       GrammarError);
}

TEST_CASE("gbnf: errors say where") {
  // Grammar texts and the whole message each is refused with.
  const std::pair<const char*, const char*> exact[] = {
      {"root ::= foo", "grammar: line 1, column 10: rule 'foo' is not defined"},
      {"start ::= \"a\"", "grammar: line 1, column 14: no rule named 'root'"},
      {"root ::= \"a\"\nroot ::= \"b\"", "grammar: line 2, column 1: rule 'root' is defined twice"},
      {"root ::= \"abc", "grammar: line 1, column 10: the literal is not closed"},
      {"root ::= [abc", "grammar: line 1, column 10: the character class is not closed"},
      {"root ::= ( \"a\"", "grammar: line 1, column 10: the group is not closed"},
      {"root ::= \"\\q\"", "grammar: line 1, column 12: unknown escape '\\q'"},
      {"root = \"a\"", "grammar: line 1, column 6: expected '::=' after the rule name"},
      {"root ::= \"a\"{10001}",
       "grammar: line 1, column 14: repetition counts above 10000 are refused"},
      {"root ::= * \"a\"", "grammar: line 1, column 10: a repetition needs something before it"},
      {"root ::= [z-a]",
       "grammar: line 1, column 10: the class has a range whose end is below its start"},
      {"root ::= \"a\" )", "grammar: line 1, column 14: expected the end of the rule, found ')'"},
  };
  for (const auto& [text, message] : exact) {
    CAPTURE(text);
    CHECK(error_of(text) == message);
  }
  // Grammar texts and a part of the message each is refused with.
  std::string deep = "root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')');
  std::string huge = "root ::=";
  for (int i = 0; i < 11; ++i) huge += " \"abcdefghij\"{10000}";
  const std::pair<std::string, const char*> partial[] = {
      {"root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"", "rule 'expr' is left-recursive"},
      {"root ::= ( \"a\"? )*", "left-recursive"},
      {deep, "groups nest deeper than 256"},
      {huge, "more than 1000000 elements"},
      {"root ::= \"a\"\n  | \"b\"", "expected a rule name"},
  };
  for (const auto& [text, part] : partial) {
    CAPTURE(text);
    CHECK(error_of(text).find(part) != std::string::npos);
  }
}

TEST_CASE("gbnf: a partial character is kept between advances") {
  const Grammar g = parse_gbnf("root ::= \"é\" \"!\"");
  GrammarMatcher m(g);
  GrammarState s = m.initial();
  REQUIRE(m.advance(s, "\xC3"));
  CHECK(s.pending.left == 1);
  CHECK_FALSE(GrammarMatcher::can_end(s));
  GrammarState bad = s;
  CHECK_FALSE(m.advance(bad, "\xA8"));  // è
  CHECK(bad == s);                      // a refused advance changes nothing
  REQUIRE(m.advance(s, "\xA9!"));
  CHECK(GrammarMatcher::can_end(s));
}

}  // namespace specd
