#include "tokenizer/split_pattern.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "common/error.hpp"
#include "tokenizer/unicode.hpp"

namespace specd {

namespace split_pattern_detail {

// Character flags: the general categories and White_Space.
enum : uint8_t {
  kLetter = 1,
  kNumber = 2,
  kPunct = 4,
  kSymbol = 8,
  kMark = 16,
  kSpace = 32,
};

struct Unit {
  uint32_t cp;  // the value literal characters compare against
  uint8_t flags;
  size_t offset;
};

uint8_t flags_of(uint32_t cp) {
  // llama.cpp classifies whitespace before categories (the two never overlap in Unicode).
  if (unicode_is_whitespace(cp)) return kSpace;
  if (unicode_is_letter(cp)) return kLetter;
  if (unicode_is_number(cp)) return kNumber;
  if (unicode_is_punctuation(cp)) return kPunct;
  if (unicode_is_symbol(cp)) return kSymbol;
  if (unicode_is_mark(cp)) return kMark;
  return 0;
}

struct AsciiFlags {
  uint8_t flags[128];
  AsciiFlags() {
    for (uint32_t c = 0; c < 128; ++c) flags[c] = flags_of(c);
  }
};

std::vector<Unit> decode_units(std::string_view text) {
  static const AsciiFlags ascii;
  std::vector<Unit> units;
  units.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Unit u = utf8_next(text, pos);
    if (!u.valid) {
      units.push_back({0xFFFD, kSymbol, pos});  // llama.cpp reads U+FFFD for the byte
    } else if (u.cp < 128) {
      units.push_back({u.cp, ascii.flags[u.cp], pos});
    } else {
      const uint8_t f = flags_of(u.cp);
      // llama.cpp hands std::regex a vertical tab for whitespace outside ASCII.
      units.push_back({f == kSpace ? 0x0Bu : u.cp, f, pos});
    }
    pos += u.len;
  }
  return units;
}

struct CharSet {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  uint8_t classes = 0;      // characters with any of these flags
  uint8_t not_classes = 0;  // characters lacking one of these flags (\S in a class)
  bool negated = false;

  bool matches(const Unit& u) const {
    bool in = (u.flags & classes) != 0 || (~u.flags & not_classes) != 0;
    for (size_t k = 0; !in && k < ranges.size(); ++k) {
      in = u.cp >= ranges[k].first && u.cp <= ranges[k].second;
    }
    return in != negated;
  }
};

// A cheap non-owning callable reference for the matcher's continuations.
template <typename Sig>
class FnRef;
template <typename R, typename... A>
class FnRef<R(A...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::remove_cv_t<F>, FnRef>>>
  FnRef(F& f) : obj_(&f), call_([](void* o, A... a) -> R { return (*static_cast<F*>(o))(a...); }) {}
  R operator()(A... a) const { return call_(obj_, a...); }

 private:
  void* obj_;
  R (*call_)(void*, A...);
};

using Cont = FnRef<bool(size_t)>;

struct SplitPatternNode {
  enum class Kind { kChar, kGroup, kLookahead, kNegLookahead, kStart, kEnd };
  Kind kind = Kind::kChar;
  CharSet set;                                      // kChar
  std::vector<std::vector<SplitPatternNode>> alts;  // kGroup and the lookaheads
  uint32_t min = 1;
  uint32_t max = 1;
};

using Node = SplitPatternNode;
using Alts = std::vector<std::vector<Node>>;

constexpr uint32_t kUnbounded = 0xFFFFFFFFu;

class Parser {
 public:
  explicit Parser(std::string_view pattern) : p_(pattern) {}

  Alts parse() {
    Alts alts = parse_alts();
    if (pos_ < p_.size()) fail("unbalanced ')'");
    return alts;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("pre-tokenizer pattern '" + std::string(p_) + "': " + what + " at byte " +
                std::to_string(pos_));
  }
  bool at_end() const { return pos_ >= p_.size(); }
  uint32_t peek() const { return at_end() ? 0 : utf8_next(p_, pos_).cp; }
  uint32_t next() {
    if (at_end()) fail("unexpected end");
    const Utf8Unit u = utf8_next(p_, pos_);
    if (!u.valid) fail("invalid UTF-8");
    pos_ += u.len;
    return u.cp;
  }
  bool eat(uint32_t c) {
    if (at_end() || peek() != c) return false;
    next();
    return true;
  }

  Alts parse_alts() {
    Alts alts(1);
    while (!at_end() && peek() != ')') {
      if (eat('|')) {
        alts.emplace_back();
        continue;
      }
      alts.back().push_back(parse_atom());
    }
    return alts;
  }

  Node parse_atom() {
    Node n;
    const uint32_t c = next();
    if (c == '(') {
      n.kind = Node::Kind::kGroup;
      if (eat('?')) {
        const uint32_t k = next();
        if (k == '=') {
          n.kind = Node::Kind::kLookahead;
        } else if (k == '!') {
          n.kind = Node::Kind::kNegLookahead;
        } else if (k != ':') {
          fail("unsupported group '(?" + std::string(1, static_cast<char>(k)) + "'");
        }
      }
      n.alts = parse_alts();
      if (!eat(')')) fail("missing ')'");
    } else if (c == '[') {
      parse_class(n.set);
    } else if (c == '\\') {
      parse_escape(n.set, false);
    } else if (c == '^') {
      n.kind = Node::Kind::kStart;
    } else if (c == '$') {
      n.kind = Node::Kind::kEnd;
    } else if (c == '.' || c == ')' || c == '?' || c == '*' || c == '+' || c == '{') {
      fail("unsupported '" + std::string(1, static_cast<char>(c)) + "'");
    } else {
      n.set.ranges.emplace_back(c, c);
    }
    parse_quantifier(n);
    return n;
  }

  uint32_t parse_number() {
    if (at_end() || peek() < '0' || peek() > '9') fail("expected a number");
    uint32_t v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (next() - '0');
      if (v > 100000) fail("repetition count too large");
    }
    return v;
  }

  void parse_quantifier(Node& n) {
    if (at_end()) return;
    const uint32_t c = peek();
    if (c == '?' || c == '*' || c == '+') {
      next();
      n.min = c == '+' ? 1 : 0;
      n.max = c == '?' ? 1 : kUnbounded;
    } else if (c == '{') {
      next();
      n.min = parse_number();
      n.max = n.min;
      if (eat(',')) n.max = peek() == '}' ? kUnbounded : parse_number();
      if (!eat('}')) fail("missing '}'");
      if (n.max < n.min) fail("repetition {n,m} with m < n");
    } else {
      return;
    }
    if (n.kind != Node::Kind::kChar && n.kind != Node::Kind::kGroup) {
      fail("quantifier on an assertion");
    }
    if (!at_end() && (peek() == '?' || peek() == '+')) fail("lazy or possessive quantifier");
  }

  // After '\': a class escape or one literal character, added to set.
  void parse_escape(CharSet& set, bool in_class) {
    const uint32_t c = next();
    switch (c) {
      case 's':
        set.classes |= kSpace;
        return;
      case 'S':
        if (in_class) {
          set.not_classes |= kSpace;
        } else {
          set.classes |= kSpace;
          set.negated = true;
        }
        return;
      case 'd':
        set.ranges.emplace_back('0', '9');
        return;
      case 'D':
        if (in_class) fail("\\D inside a class");
        set.ranges.emplace_back('0', '9');
        set.negated = true;
        return;
      case 'p': {
        if (!eat('{')) fail("expected '{' after \\p");
        const uint32_t cat = next();
        if (!eat('}')) fail("unsupported \\p{...} category");
        static constexpr std::pair<uint32_t, uint8_t> kCats[] = {
            {'L', kLetter}, {'N', kNumber}, {'P', kPunct}, {'S', kSymbol}, {'M', kMark}};
        for (const auto& [name, flag] : kCats) {
          if (cat == name) {
            set.classes |= flag;
            return;
          }
        }
        fail("unsupported \\p{...} category");
      }
      default:
        set.ranges.emplace_back(literal_escape(c), literal_escape(c));
        return;
    }
  }

  uint32_t literal_escape(uint32_t c) {
    switch (c) {
      case 'r':
        return '\r';
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'f':
        return '\f';
      case 'v':
        return '\v';
      default:
        break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      fail("unsupported escape '\\" + std::string(1, static_cast<char>(c)) + "'");
    }
    return c;
  }

  // After '[': items up to the closing ']'.
  void parse_class(CharSet& set) {
    set.negated = eat('^');
    while (true) {
      if (at_end()) fail("missing ']'");
      uint32_t c = next();
      if (c == ']') return;
      if (c == '\\') {
        const uint32_t e = peek();
        if (e == 's' || e == 'S' || e == 'd' || e == 'D' || e == 'p') {
          parse_escape(set, true);
          continue;
        }
        c = literal_escape(next());
      }
      uint32_t last = c;
      if (peek() == '-') {
        const size_t save = pos_;
        next();
        if (at_end() || peek() == ']') {
          pos_ = save;  // a trailing '-' is literal
        } else {
          last = next();
          if (last == '\\') last = literal_escape(next());
          if (last < c) fail("range out of order");
        }
      }
      set.ranges.emplace_back(c, last);
    }
  }

  std::string_view p_;
  size_t pos_ = 0;
};

// Fewest characters any match of alts needs.
uint64_t min_length(const Alts& alts) {
  uint64_t best = UINT64_MAX;
  for (const auto& seq : alts) {
    uint64_t len = 0;
    for (const Node& n : seq) {
      if (n.kind == Node::Kind::kChar) len += n.min;
      if (n.kind == Node::Kind::kGroup) len += n.min * min_length(n.alts);
    }
    best = std::min(best, len);
  }
  return best;
}

class Matcher {
 public:
  explicit Matcher(const std::vector<Unit>& units) : u_(units) {}

  // Leftmost match starting at or after from; returns its [start, end) or false.
  bool search(const Alts& alts, size_t from, size_t& start, size_t& end) const {
    // A pattern that is one sequence starting with an unbounded character run (\s+$): when it
    // fails at s, it fails at every later start inside that run too, since those try a
    // subset of the same split points; skipping them keeps long runs linear.
    const Node* lead = alts.size() == 1 && !alts[0].empty() &&
                               alts[0][0].kind == Node::Kind::kChar && alts[0][0].max == kUnbounded
                           ? &alts[0][0]
                           : nullptr;
    for (size_t s = from; s < u_.size();) {
      size_t e = 0;
      auto done = [&](size_t p) {
        e = p;
        return true;
      };
      if (match_alts(alts, s, Cont(done)) && e > s) {
        start = s;
        end = e;
        return true;
      }
      size_t next = s + 1;
      if (lead) {
        while (next < u_.size() && lead->set.matches(u_[s]) && lead->set.matches(u_[next])) ++next;
      }
      s = next;
    }
    return false;
  }

 private:
  bool match_alts(const Alts& alts, size_t pos, Cont k) const {
    for (const auto& seq : alts) {
      if (match_seq(seq, 0, pos, k)) return true;
    }
    return false;
  }

  bool match_seq(const std::vector<Node>& seq, size_t i, size_t pos, Cont k) const {
    if (i == seq.size()) return k(pos);
    const Node& n = seq[i];
    auto rest = [&](size_t p) { return match_seq(seq, i + 1, p, k); };
    if (n.kind == Node::Kind::kChar) {
      // Greedy: take the longest run, give characters back one at a time.
      size_t run = 0;
      while (run < n.max && pos + run < u_.size() && n.set.matches(u_[pos + run])) ++run;
      if (run < n.min) return false;
      for (size_t c = run + 1; c-- > n.min;) {
        if (rest(pos + c)) return true;
      }
      return false;
    }
    if (n.kind == Node::Kind::kGroup) return match_repeat(n, 0, pos, Cont(rest));
    if (n.kind == Node::Kind::kStart) return pos == 0 && rest(pos);
    if (n.kind == Node::Kind::kEnd) return pos == u_.size() && rest(pos);
    auto accept = [](size_t) { return true; };
    const bool seen = match_alts(n.alts, pos, Cont(accept));
    return seen == (n.kind == Node::Kind::kLookahead) && rest(pos);
  }

  bool match_repeat(const Node& n, uint32_t count, size_t pos, Cont k) const {
    if (count < n.max) {
      auto again = [&](size_t p) {
        if (p == pos && count >= n.min) return false;  // an empty iteration ends the loop
        return match_repeat(n, count + 1, p, k);
      };
      if (match_alts(n.alts, pos, Cont(again))) return true;
    }
    return count >= n.min && k(pos);
  }

  const std::vector<Unit>& u_;
};

}  // namespace split_pattern_detail

using namespace split_pattern_detail;

struct SplitPattern::Program {
  Alts alts;
};

SplitPattern::SplitPattern(std::string_view pattern) : pattern_(pattern) {
  auto program = std::make_shared<Program>();
  program->alts = Parser(pattern).parse();
  if (min_length(program->alts) == 0) {
    throw Error("pre-tokenizer pattern '" + pattern_ + "' can match empty text");
  }
  program_ = std::move(program);
}

void SplitPattern::split(std::string_view text, std::vector<std::string_view>& out) const {
  const std::vector<Unit> units = decode_units(text);
  const Matcher m(units);
  auto offset = [&](size_t k) { return k < units.size() ? units[k].offset : text.size(); };
  size_t done = 0;  // units already emitted
  size_t start = 0;
  size_t end = 0;
  while (m.search(program_->alts, done, start, end)) {
    if (start > done) out.push_back(text.substr(offset(done), offset(start) - offset(done)));
    out.push_back(text.substr(offset(start), offset(end) - offset(start)));
    done = end;
  }
  if (done < units.size()) out.push_back(text.substr(offset(done)));
}

}  // namespace specd
