#include "grammar/grammar_matcher.hpp"

#include <algorithm>
#include <bit>

namespace specd {
namespace {

// Bounds on an ambiguous grammar's work, so that a hostile one fails instead of exhausting
// memory: parses alive at once, and stack nodes made while advancing one state.
constexpr size_t kMaxParses = 10000;
constexpr size_t kMaxNodes = 1u << 22;

}  // namespace

GrammarMatcher::GrammarMatcher(const Grammar& grammar, uint64_t max_work)
    : grammar_(grammar), max_work_(max_work) {}

int32_t GrammarMatcher::node(uint32_t pos, int32_t parent) {
  if (arena_.size() >= kMaxNodes)
    throw GrammarError("grammar: too ambiguous (more than 4194304 parse steps for one token)");
  spend();
  arena_.push_back({pos, parent});
  return static_cast<int32_t>(arena_.size() - 1);
}

void GrammarMatcher::expand(int32_t start, std::vector<int32_t>& out) {
  work_.clear();
  work_.push_back(start);
  while (!work_.empty()) {
    int32_t n = work_.back();
    work_.pop_back();
    for (;;) {
      if (n == kComplete) {
        out.push_back(kComplete);
        break;
      }
      const Node at = arena_[static_cast<size_t>(n)];
      const GrammarElement& e = grammar_.elements[at.pos];
      if (e.kind == GrammarElement::kChars) {
        out.push_back(n);
        break;
      }
      if (e.kind == GrammarElement::kEnd) {
        n = at.parent;  // the alternative is done: continue with its continuation
        continue;
      }
      // A reference: its continuation (none when it ends the alternative: a tail call), then
      // each alternative of the rule on top of it.
      const int32_t cont = grammar_.elements[at.pos + 1].kind == GrammarElement::kEnd
                               ? at.parent
                               : node(at.pos + 1, at.parent);
      const auto& alternatives = grammar_.rule_alternatives[e.rule];
      for (size_t i = alternatives.size(); i-- > 1;) work_.push_back(node(alternatives[i], cont));
      n = node(alternatives[0], cont);
    }
  }
}

bool GrammarMatcher::same_stack(int32_t a, int32_t b) {
  while (a != b) {
    spend();  // deep stacks of equal content cost their depth
    if (a == kComplete || b == kComplete) return false;
    const Node& x = arena_[static_cast<size_t>(a)];
    const Node& y = arena_[static_cast<size_t>(b)];
    if (x.pos != y.pos) return false;
    a = x.parent;
    b = y.parent;
  }
  return true;
}

void GrammarMatcher::reset() {
  clear_scratch();
  work_done_ = 0;
}

void GrammarMatcher::clear_scratch() {
  arena_.clear();
  sets_.clear();
}

void GrammarMatcher::spend(uint64_t units) {
  work_done_ += units;
  if (work_done_ > max_work_)
    throw GrammarError("grammar: too ambiguous (masking one position took more than " +
                       std::to_string(max_work_) + " parse steps)");
}

void GrammarMatcher::dedupe(size_t begin) {
  if (sets_.size() - begin <= 1) return;
  // Different nodes may hold equal stacks (an ambiguous grammar). Equal stacks have equal
  // tops: sort by top, compare stacks only within a run of equal tops.
  const auto top = [&](int32_t n) -> int64_t {
    return n == kComplete ? -1 : static_cast<int64_t>(arena_[static_cast<size_t>(n)].pos);
  };
  const uint64_t n = sets_.size() - begin;
  spend(n * static_cast<uint64_t>(std::bit_width(n)));  // the sort's comparisons
  std::sort(sets_.begin() + static_cast<ptrdiff_t>(begin), sets_.end(), [&](int32_t a, int32_t b) {
    const int64_t ta = top(a), tb = top(b);
    return ta < tb || (ta == tb && a < b);
  });
  size_t out = begin;
  for (size_t i = begin; i < sets_.size(); ++i) {
    bool duplicate = false;
    for (size_t j = out; j-- > begin && top(sets_[j]) == top(sets_[i]);) {
      if (same_stack(sets_[j], sets_[i])) {
        duplicate = true;
        break;
      }
    }
    if (!duplicate) sets_[out++] = sets_[i];
  }
  sets_.resize(out);
  if (out - begin > kMaxParses)
    throw GrammarError("grammar: too ambiguous (more than 10000 parses alive at once)");
}

size_t GrammarMatcher::step(size_t begin, size_t end, uint32_t cp) {
  const size_t out = sets_.size();
  for (size_t i = begin; i < end; ++i) {
    const int32_t n = sets_[i];
    if (n == kComplete) continue;
    const Node at = arena_[static_cast<size_t>(n)];
    if (grammar_.elements[at.pos].matches(cp)) expand(node(at.pos + 1, at.parent), sets_);
  }
  dedupe(out);
  return out;
}

namespace {

// The code points a UTF-8 character of `length` bytes may spell: no overlong forms.
std::pair<uint32_t, uint32_t> code_point_range(uint8_t length) {
  switch (length) {
    case 2:
      return {0x80, 0x7FF};
    case 3:
      return {0x800, 0xFFFF};
    default:
      return {0x10000, 0x10FFFF};
  }
}

bool is_surrogate(uint32_t cp) {
  return cp >= 0xD800 && cp <= 0xDFFF;
}

}  // namespace

bool GrammarMatcher::feasible(size_t begin, size_t end, const Utf8Pending& pending) const {
  const uint32_t shift = 6u * pending.left;
  const auto [min, max] = code_point_range(pending.length);
  const uint32_t lo = std::max(pending.bits << shift, min);
  const uint32_t hi = std::min(pending.bits << shift | ((1u << shift) - 1), max);
  if (lo > hi) return false;  // only overlong or out-of-range characters start this way
  // The code points left, surrogates taken out.
  std::pair<uint32_t, uint32_t> spans[2] = {{lo, std::min(hi, 0xD7FFu)},
                                            {std::max(lo, 0xE000u), hi}};
  if (hi < 0xD800 || lo > 0xDFFF) spans[0] = spans[1] = {lo, hi};
  for (size_t i = begin; i < end; ++i) {
    const int32_t n = sets_[i];
    if (n == kComplete) continue;
    const GrammarElement& e = grammar_.elements[arena_[static_cast<size_t>(n)].pos];
    for (const auto& [a, b] : spans)
      if (a <= b && e.matches_any(a, b)) return true;
  }
  return false;
}

bool GrammarMatcher::feed(unsigned char byte, Utf8Pending& pending, size_t& begin, size_t& end) {
  if (pending.left == 0) {
    if (byte < 0x80) {
      pending.bits = byte;
    } else if (byte >= 0xC2 && byte <= 0xDF) {
      pending = {byte & 0x1Fu, 1, 2};
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      pending = {byte & 0x0Fu, 2, 3};
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      pending = {byte & 0x07u, 3, 4};
    } else {
      return false;  // not the start of a UTF-8 character
    }
  } else {
    if ((byte & 0xC0) != 0x80) return false;
    pending.bits = (pending.bits << 6) | (byte & 0x3Fu);
    --pending.left;
  }
  if (pending.left > 0) return feasible(begin, end, pending);
  const uint32_t cp = pending.bits;
  const uint8_t length = pending.length;
  pending = {};
  if (length > 1) {
    // Overlong forms and surrogates spell no character (a model can emit their bytes).
    const auto [min, max] = code_point_range(length);
    if (cp < min || cp > max || is_surrogate(cp)) return false;
  }
  const size_t next = step(begin, end, cp);
  begin = next;
  end = sets_.size();
  return begin != end;
}

size_t GrammarMatcher::load(const GrammarState& state) {
  const size_t begin = sets_.size();
  for (const auto& stack : state.stacks) {
    int32_t parent = kComplete;
    for (const uint32_t pos : stack) parent = node(pos, parent);
    sets_.push_back(parent);
  }
  return begin;
}

void GrammarMatcher::store(size_t begin, size_t end, GrammarState& state) const {
  state.stacks.clear();
  for (size_t i = begin; i < end; ++i) {
    std::vector<uint32_t> stack;
    for (int32_t n = sets_[i]; n != kComplete; n = arena_[static_cast<size_t>(n)].parent)
      stack.push_back(arena_[static_cast<size_t>(n)].pos);
    std::reverse(stack.begin(), stack.end());
    state.stacks.push_back(std::move(stack));
  }
}

GrammarState GrammarMatcher::initial() {
  reset();
  for (const uint32_t start : grammar_.rule_alternatives[grammar_.root])
    expand(node(start, kComplete), sets_);
  dedupe(0);
  GrammarState state;
  store(0, sets_.size(), state);
  return state;
}

bool GrammarMatcher::advance(GrammarState& state, std::string_view bytes) {
  reset();
  return advance_within_call(state, bytes);
}

bool GrammarMatcher::advance_within_call(GrammarState& state, std::string_view bytes) {
  clear_scratch();
  size_t begin = load(state);
  size_t end = sets_.size();
  Utf8Pending pending = state.pending;
  for (const char ch : bytes)
    if (!feed(static_cast<unsigned char>(ch), pending, begin, end)) return false;
  store(begin, end, state);
  state.pending = pending;
  return true;
}

bool GrammarMatcher::can_end(const GrammarState& state) {
  if (state.pending.left != 0) return false;
  return std::any_of(state.stacks.begin(), state.stacks.end(),
                     [](const auto& s) { return s.empty(); });
}

void GrammarMatcher::walk(uint32_t trie_node, size_t begin, size_t end, Utf8Pending pending,
                          int depth) {
  const TokenTrie::Node& at = trie_->nodes()[trie_node];
  for (const int32_t token : at.tokens) (*allowed_)[static_cast<size_t>(token)] = 1;
  if (depth >= TokenTrie::kMaxDepth) return;
  for (const auto& [byte, child] : at.children) {
    const size_t arena_mark = arena_.size();
    const size_t sets_mark = sets_.size();
    Utf8Pending p = pending;
    size_t b = begin, e = end;
    if (feed(byte, p, b, e)) walk(child, b, e, p, depth + 1);
    arena_.resize(arena_mark);
    sets_.resize(sets_mark);
  }
}

bool GrammarMatcher::allowed_tokens(const GrammarState& state, const TokenTrie& trie,
                                    std::vector<uint8_t>& allowed) {
  allowed.assign(trie.vocab(), 0);
  reset();
  const size_t begin = load(state);
  const size_t end = sets_.size();
  trie_ = &trie;
  allowed_ = &allowed;
  walk(0, begin, end, state.pending, 0);
  // Tokens too long for the trie: one by one, within this call's budget.
  for (const int32_t token : trie.long_tokens()) {
    GrammarState copy = state;
    allowed[static_cast<size_t>(token)] = advance_within_call(copy, trie.piece(token)) ? 1 : 0;
  }
  return std::find(allowed.begin(), allowed.end(), 1) != allowed.end();
}

}  // namespace specd
