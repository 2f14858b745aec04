// GBNF, llama.cpp's grammar format, parsed into a flat program that GrammarMatcher runs:
//
//   root  ::= "{" ws pair ("," ws pair)* "}"      # rules: a name, ::=, alternatives
//   pair  ::= [a-z]+ ":" ws ( "yes" | "no" )      # literals, classes, groups, references
//   ws    ::= [ \t\n]{0,8}                        # repetition: * + ? {m} {m,} {m,n} {,n}
//
// Literals and classes hold Unicode code points (escapes: \n \r \t \\ \" \[ \] \xHH \uHHHH
// \UHHHHHHHH); `.` is any code point; [^...] negates a class. A rule ends at the end of its
// line unless a group or an alternative's `|` continues it; `#` starts a comment. Repetition
// is rewritten into helper rules (x* = x x* | ε) as llama.cpp does, so the program has only
// three kinds of element: a class, a rule reference, and the end of an alternative.
//
// Refused, with the line and column: syntax errors, undefined rules, a missing `root`,
// left recursion (the matcher could not expand it), repetition counts above 10000 and
// programs above 1,000,000 elements (a class counts once per range).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace specd {

// A grammar that does not parse (its message says where), or that fails while it runs: too
// ambiguous, or asking for a character no token spells. A UsageError: the grammar is at fault.
class GrammarError : public UsageError {
 public:
  explicit GrammarError(const std::string& message) : UsageError(message) {}
};

struct GrammarElement {
  enum Kind : uint8_t { kChars, kRule, kEnd };
  Kind kind = kEnd;
  uint32_t rule = 0;  // kRule: the rule referred to
  // kChars: the code points matched, as inclusive ranges sorted, disjoint and not adjacent
  // (the parser merges a class's ranges and turns [^...] and `.` into their complement, so
  // both lookups below are binary searches however the class was written).
  std::vector<std::pair<uint32_t, uint32_t>> ranges;

  bool matches(uint32_t cp) const;
  // Whether some code point in [lo, hi] matches (for a character not yet complete).
  bool matches_any(uint32_t lo, uint32_t hi) const;
};

struct Grammar {
  std::vector<GrammarElement> elements;                  // every alternative, each ending in kEnd
  std::vector<std::vector<uint32_t>> rule_alternatives;  // rule -> its alternatives' starts
  std::vector<std::string> rule_names;                   // helper rules are named "<rule>_<n>"
  uint32_t root = 0;
};

// Throws GrammarError ("grammar: line L, column C: ...").
Grammar parse_gbnf(std::string_view text);

}  // namespace specd
