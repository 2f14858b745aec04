#include "config/toml_text.hpp"

#include <vector>

#include "common/error.hpp"
#include "common/file_io.hpp"

namespace specd {
namespace {

// A character cursor that knows its line and column (1-based, columns in bytes).
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  bool done() const { return i_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return i_ + ahead < text_.size() ? text_[i_ + ahead] : 0; }
  bool starts_with(std::string_view s) const { return text_.substr(i_).starts_with(s); }
  void next() {
    if (text_[i_++] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
  }
  TomlPosition here() const { return {line_, column_}; }

  // Skips a string starting here ('"', '\'', or their triple forms).
  void skip_string() {
    const char quote = peek();
    const bool triple = peek(1) == quote && peek(2) == quote;
    const bool basic = quote == '"';
    for (int k = 0; k < (triple ? 3 : 1); ++k) next();
    while (!done()) {
      if (basic && peek() == '\\') {
        next();
        if (!done()) next();
        continue;
      }
      if (peek() == quote && (!triple || (peek(1) == quote && peek(2) == quote))) {
        for (int k = 0; k < (triple ? 3 : 1); ++k) next();
        // A closing triple may be followed by up to two more quotes of the content.
        while (triple && peek() == quote) next();
        return;
      }
      if (!triple && peek() == '\n') return;  // unterminated: the parser reports it
      next();
    }
  }

  void skip_comment() {
    while (!done() && peek() != '\n') next();
  }

 private:
  std::string_view text_;
  size_t i_ = 0;
  uint32_t line_ = 1;
  uint32_t column_ = 1;
};

struct Frame {
  char open;  // '[' array or '{' inline table
  int depth;  // the depth of the value that opened it
};

[[noreturn]] void throw_located(const std::string& name, TomlPosition at,
                                const std::string& message) {
  throw UsageError(name + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " +
                   message);
}

// Refuses NUL in every key and string of `node`, recursively (depth is bounded by the
// nesting check that ran before parsing).
void refuse_nul(const toml::node& node, const std::string& name) {
  auto at = [](const toml::source_region& s) { return TomlPosition{s.begin.line, s.begin.column}; };
  const char* message =
      "a NUL character (\\u0000) in a string: no path or text may contain one (it would "
      "silently end the string)";
  if (const toml::table* t = node.as_table()) {
    for (const auto& [key, value] : *t) {
      if (key.str().find('\0') != std::string_view::npos)
        throw_located(name, at(key.source()), message);
      refuse_nul(value, name);
    }
  } else if (const toml::array* a = node.as_array()) {
    for (const toml::node& item : *a) refuse_nul(item, name);
  } else if (const auto* s = node.as_string()) {
    if (s->get().find('\0') != std::string::npos) throw_located(name, at(node.source()), message);
  }
}

}  // namespace

bool toml_holds_nul(const toml::node& node) {
  if (const toml::table* t = node.as_table()) {
    for (const auto& [key, value] : *t)
      if (key.str().find('\0') != std::string_view::npos || toml_holds_nul(value)) return true;
  } else if (const toml::array* a = node.as_array()) {
    for (const toml::node& item : *a)
      if (toml_holds_nul(item)) return true;
  } else if (const auto* s = node.as_string()) {
    return s->get().find('\0') != std::string::npos;
  }
  return false;
}

TomlPosition find_deep_nesting(std::string_view text, int limit) {
  Cursor c(text);
  std::vector<Frame> stack;
  bool at_key = true;  // reading a key (line start at top level, or in an inline table)
  int key_base = 0;    // depth of the table the key belongs to
  int header_depth = 0;
  int dots = 0;
  int value_depth = 0;
  while (!c.done()) {
    const char ch = c.peek();
    if (ch == '#') {
      c.skip_comment();
      continue;
    }
    if (ch == '"' || ch == '\'') {
      c.skip_string();
      continue;
    }
    const TomlPosition here = c.here();
    if (ch == '\n' && stack.empty()) {
      at_key = true;
      key_base = header_depth;
      dots = 0;
    } else if (at_key && stack.empty() && ch == '[') {
      // A table header [a.b.c] or [[a.b.c]]: its depth is its number of keys.
      c.next();
      int parts = 1;
      while (!c.done() && c.peek() != ']' && c.peek() != '\n') {
        if (c.peek() == '"' || c.peek() == '\'') {
          c.skip_string();
          continue;
        }
        if (c.peek() == '.' && ++parts > limit) return c.here();
        c.next();
      }
      header_depth = parts;
      at_key = false;
      continue;
    } else if (at_key && ch == '.') {
      if (key_base + ++dots + 1 > limit) return here;
    } else if (at_key && ch == '=') {
      at_key = false;
      value_depth = key_base + dots + 1;
      dots = 0;
    } else if (!at_key && (ch == '[' || ch == '{')) {
      stack.push_back({ch, value_depth});
      if (++value_depth > limit) return here;
      if (ch == '{') {
        at_key = true;
        key_base = value_depth;
        dots = 0;
      }
    } else if ((ch == ']' || ch == '}') && !stack.empty() &&
               stack.back().open == (ch == ']' ? '[' : '{')) {
      value_depth = stack.back().depth;
      stack.pop_back();
      at_key = false;
    } else if (ch == ',' && !stack.empty()) {
      if (stack.back().open == '{') {
        at_key = true;
        key_base = stack.back().depth + 1;
        dots = 0;
      } else {
        value_depth = stack.back().depth + 1;
      }
    }
    c.next();
  }
  return {};
}

toml::table parse_toml_text(std::string_view text, const std::string& name) {
  const TomlPosition deep = find_deep_nesting(text);
  if (deep.line != 0)
    throw_located(name, deep,
                  "nested deeper than " + std::to_string(kMaxTomlNesting) +
                      " levels (table headers, dotted keys, arrays, inline tables); refused "
                      "before parsing");
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw_located(name, {e.source().begin.line, e.source().begin.column},
                  std::string(e.description()));
  }
  refuse_nul(root, name);
  return root;
}

toml::table parse_toml_file(const std::string& path, const std::string& what) {
  return parse_toml_text(read_text_file(path, what), path);
}

}  // namespace specd
