#include "grammar/gbnf_grammar.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "tokenizer/unicode.hpp"

namespace specd {

bool GrammarElement::matches(uint32_t cp) const {
  return matches_any(cp, cp);
}

bool GrammarElement::matches_any(uint32_t lo, uint32_t hi) const {
  // The first range that does not end below lo; [lo, hi] meets it, or no range.
  const auto it = std::lower_bound(ranges.begin(), ranges.end(), lo,
                                   [](const auto& range, uint32_t v) { return range.second < v; });
  return it != ranges.end() && it->first <= hi;
}

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A class's ranges sorted and merged (overlapping or adjacent ones joined); with `negated`,
// the code points outside them instead.
std::vector<std::pair<uint32_t, uint32_t>> normalized(
    std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  if (!negated) return merged;
  std::vector<std::pair<uint32_t, uint32_t>> outside;
  uint32_t next = 0;  // the lowest code point not yet covered or placed
  for (const auto& [a, b] : merged) {
    if (a > next) outside.emplace_back(next, a - 1);
    next = b + 1;
  }
  if (next <= kMaxCodePoint) outside.emplace_back(next, kMaxCodePoint);
  return outside;
}

constexpr uint32_t kMaxRepetition = 10000;
constexpr size_t kMaxElements = 1'000'000;
constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();

using Sequence = std::vector<GrammarElement>;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Grammar parse() {
    for (;;) {
      skip_space(true);
      if (at_end()) break;
      const size_t name_at = pos_;
      const std::string name = parse_name();
      const uint32_t rule = rule_id(name, name_at);
      if (defined_[rule]) fail(name_at, "rule '" + name + "' is defined twice");
      defined_[rule] = true;
      skip_space(false);
      if (text_.substr(pos_, 3) != "::=") fail(pos_, "expected '::=' after the rule name");
      pos_ += 3;
      skip_space(true);
      rules_[rule] = parse_alternates(name, false);
      skip_space(false);
      if (!at_end() && text_[pos_] != '\n' && text_[pos_] != '\r')
        fail(pos_, "expected the end of the rule, found '" + std::string(1, text_[pos_]) + "'");
    }
    for (uint32_t r = 0; r < rules_.size(); ++r)
      if (!defined_[r]) fail(referenced_at_[r], "rule '" + names_[r] + "' is not defined");
    const auto root = ids_.find("root");
    if (root == ids_.end()) fail(text_.size(), "no rule named 'root'");
    check_left_recursion();
    return flatten(root->second);
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) {
        ++col;
      }
    }
    throw GrammarError("grammar: line " + std::to_string(line) + ", column " + std::to_string(col) +
                       ": " + what);
  }

  bool at_end() const { return pos_ >= text_.size(); }

  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    if (pos_ == start) fail(start, "expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  uint32_t rule_id(const std::string& name, size_t at) {
    const auto [it, added] = ids_.emplace(name, static_cast<uint32_t>(rules_.size()));
    if (added) new_rule(name, at);
    return it->second;
  }

  uint32_t new_rule(const std::string& name, size_t at) {
    names_.push_back(name);
    rules_.emplace_back();
    defined_.push_back(false);
    referenced_at_.push_back(at);
    return static_cast<uint32_t>(rules_.size() - 1);
  }

  uint32_t helper_rule(const std::string& parent, size_t at) {
    const uint32_t r = new_rule(parent + "_" + std::to_string(rules_.size()), at);
    defined_[r] = true;
    return r;
  }

  uint32_t parse_hex(size_t digits) {
    uint32_t v = 0;
    for (size_t i = 0; i < digits; ++i) {
      if (at_end()) fail(pos_, "the escape ends early");
      const char c = text_[pos_];
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) fail(pos_, "expected a hexadecimal digit");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > 0x10FFFF) fail(pos_, "the escape is not a Unicode code point");
    return v;
  }

  // One code point of a literal or class: an escape or a UTF-8 character.
  uint32_t parse_char() {
    if (at_end()) fail(pos_, "unexpected end of the grammar");
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c == '\\') {
      ++pos_;
      if (at_end()) fail(pos_, "the escape ends early");
      const char e = text_[pos_++];
      switch (e) {
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '/':
        case '-':
        case '^':
        case '\'':
          return static_cast<unsigned char>(e);
        default:
          fail(pos_ - 1, std::string("unknown escape '\\") + e + "'");
      }
    }
    const Utf8Unit u = utf8_next(text_, pos_);
    if (!u.valid) fail(pos_, "the grammar is not valid UTF-8");
    pos_ += u.len;
    return u.cp;
  }

  uint32_t parse_count() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (!at_end() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      v = v * 10 + static_cast<uint64_t>(text_[pos_] - '0');
      if (v > kMaxRepetition) fail(start, "repetition counts above 10000 are refused");
      ++pos_;
    }
    if (pos_ == start) fail(start, "expected a number");
    return static_cast<uint32_t>(v);
  }

  // A class counts once per range: repetition copies it whole.
  void add(Sequence& seq, GrammarElement e) {
    element_count_ += std::max<size_t>(1, e.ranges.size());
    if (element_count_ > kMaxElements)
      fail(pos_, "the grammar expands to more than 1000000 elements (a class counts its ranges)");
    seq.push_back(std::move(e));
  }

  static GrammarElement reference(uint32_t rule) {
    GrammarElement e;
    e.kind = GrammarElement::kRule;
    e.rule = rule;
    return e;
  }

  // seq[from..] repeated min..max times (max kUnbounded: no upper bound).
  void repeat(const std::string& rule_name, Sequence& seq, size_t from, uint32_t min, uint32_t max,
              size_t at) {
    if (from == seq.size()) fail(at, "a repetition needs something before it");
    if (max < min) fail(at, "the repetition's maximum is below its minimum");
    const Sequence item(seq.begin() + static_cast<ptrdiff_t>(from), seq.end());
    seq.resize(from);
    for (uint32_t i = 0; i < min; ++i)
      for (const auto& e : item) add(seq, e);
    if (max == kUnbounded) {
      // r ::= item r | ε
      const uint32_t r = helper_rule(rule_name, at);
      Sequence again;
      for (const auto& e : item) add(again, e);
      add(again, reference(r));
      rules_[r] = {again, {}};
      add(seq, reference(r));
      return;
    }
    // (item (item (...)?)?)?: the innermost first.
    uint32_t next = 0;
    bool have_next = false;
    for (uint32_t i = min; i < max; ++i) {
      const uint32_t r = helper_rule(rule_name, at);
      Sequence body;
      for (const auto& e : item) add(body, e);
      if (have_next) add(body, reference(next));
      rules_[r] = {body, {}};
      next = r;
      have_next = true;
    }
    if (have_next) add(seq, reference(next));
  }

  Sequence parse_sequence(const std::string& rule_name, bool nested) {
    Sequence seq;
    size_t last = seq.size();  // where the last item starts, for a repetition
    for (;;) {
      if (at_end()) break;
      const char c = text_[pos_];
      const size_t at = pos_;
      if (c == '"') {
        ++pos_;
        last = seq.size();
        while (!at_end() && text_[pos_] != '"') {
          GrammarElement e;
          e.kind = GrammarElement::kChars;
          const uint32_t cp = parse_char();
          e.ranges.emplace_back(cp, cp);
          add(seq, std::move(e));
        }
        if (at_end()) fail(at, "the literal is not closed");
        ++pos_;
      } else if (c == '[') {
        ++pos_;
        last = seq.size();
        GrammarElement e;
        e.kind = GrammarElement::kChars;
        bool negated = false;
        if (!at_end() && text_[pos_] == '^') {
          negated = true;
          ++pos_;
        }
        while (!at_end() && text_[pos_] != ']') {
          const uint32_t lo = parse_char();
          uint32_t hi = lo;
          if (pos_ + 1 < text_.size() && text_[pos_] == '-' && text_[pos_ + 1] != ']') {
            ++pos_;
            hi = parse_char();
            if (hi < lo) fail(at, "the class has a range whose end is below its start");
          }
          e.ranges.emplace_back(lo, hi);
        }
        if (at_end()) fail(at, "the character class is not closed");
        ++pos_;
        e.ranges = normalized(std::move(e.ranges), negated);
        add(seq, std::move(e));
      } else if (c == '.') {
        ++pos_;
        last = seq.size();
        GrammarElement e;
        e.kind = GrammarElement::kChars;
        e.ranges.emplace_back(0, kMaxCodePoint);  // any code point
        add(seq, std::move(e));
      } else if (is_name_char(c)) {
        last = seq.size();
        const std::string name = parse_name();
        add(seq, reference(rule_id(name, at)));
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        last = seq.size();
        if (++depth_ > 256) fail(at, "groups nest deeper than 256");
        const uint32_t r = helper_rule(rule_name, at);
        std::vector<Sequence> group = parse_alternates(rule_name, true);
        rules_[r] = std::move(group);
        --depth_;
        if (at_end() || text_[pos_] != ')') fail(at, "the group is not closed");
        ++pos_;
        add(seq, reference(r));
      } else if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        repeat(rule_name, seq, last, c == '+' ? 1 : 0, c == '?' ? 1 : kUnbounded, at);
      } else if (c == '{') {
        ++pos_;
        skip_space(false);
        uint32_t min = 0, max = kUnbounded;
        if (!at_end() && text_[pos_] != ',') min = parse_count();
        skip_space(false);
        if (!at_end() && text_[pos_] == ',') {
          ++pos_;
          skip_space(false);
          if (!at_end() && text_[pos_] != '}') max = parse_count();
        } else {
          max = min;
        }
        skip_space(false);
        if (at_end() || text_[pos_] != '}') fail(at, "the repetition is not closed with '}'");
        ++pos_;
        repeat(rule_name, seq, last, min, max, at);
      } else {
        break;
      }
      skip_space(nested);
    }
    return seq;
  }

  std::vector<Sequence> parse_alternates(const std::string& rule_name, bool nested) {
    std::vector<Sequence> alternatives;
    alternatives.push_back(parse_sequence(rule_name, nested));
    while (!at_end() && text_[pos_] == '|') {
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(rule_name, nested));
    }
    return alternatives;
  }

  // The matcher expands references depth-first; a rule that can reach itself without
  // consuming a character would expand forever.
  void check_left_recursion() const {
    const size_t n = rules_.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const auto& alt : rules_[r])
          if (std::all_of(alt.begin(), alt.end(), [&](const GrammarElement& e) {
                return e.kind == GrammarElement::kRule && nullable[e.rule];
              })) {
            nullable[r] = changed = true;
            break;
          }
      }
    }
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r)
      for (const auto& alt : rules_[r])
        for (const auto& e : alt) {
          if (e.kind != GrammarElement::kRule) break;
          left[r].push_back(e.rule);
          if (!nullable[e.rule]) break;
        }
    std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> stack;
    for (uint32_t start = 0; start < n; ++start) {
      if (state[start]) continue;
      stack.emplace_back(start, 0);
      state[start] = 1;
      while (!stack.empty()) {
        auto& [r, i] = stack.back();
        if (i == left[r].size()) {
          state[r] = 2;
          stack.pop_back();
          continue;
        }
        const uint32_t next = left[r][i++];
        if (state[next] == 1)
          fail(referenced_at_[next], "rule '" + names_[next] +
                                         "' is left-recursive (it can reach itself without "
                                         "matching a character, e.g. a repetition of something "
                                         "that may be empty)");
        if (state[next] == 0) {
          state[next] = 1;
          stack.emplace_back(next, 0);
        }
      }
    }
  }

  Grammar flatten(uint32_t root) const {
    Grammar g;
    g.root = root;
    g.rule_names = names_;
    g.rule_alternatives.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r)
      for (const auto& alt : rules_[r]) {
        g.rule_alternatives[r].push_back(static_cast<uint32_t>(g.elements.size()));
        g.elements.insert(g.elements.end(), alt.begin(), alt.end());
        g.elements.emplace_back();  // kEnd
      }
    return g;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
  size_t element_count_ = 0;
  std::map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;
  std::vector<std::vector<Sequence>> rules_;
  std::vector<bool> defined_;
  std::vector<size_t> referenced_at_;
};

}  // namespace

Grammar parse_gbnf(std::string_view text) {
  if (text.size() > (1u << 20)) throw GrammarError("grammar: longer than 1 MiB");
  return Parser(text).parse();
}

}  // namespace specd
