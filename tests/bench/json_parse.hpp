// A strict little JSON parser for the report tests: parses a whole document or throws.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tokenizer/unicode.hpp"

namespace specd::test {

struct Json {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  bool b = false;
  double n = 0;
  std::string s;
  std::vector<Json> a;
  std::map<std::string, Json> o;
  const Json& operator[](const std::string& k) const {
    auto it = o.find(k);
    if (it == o.end()) throw std::runtime_error("no key " + k);
    return it->second;
  }
  bool has(const std::string& k) const { return o.count(k) > 0; }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : t_(text) {}
  Json parse() {
    Json v = value();
    ws();
    if (i_ != t_.size()) fail("trailing text");
    return v;
  }

 private:
  uint32_t hex4() {
    if (i_ + 4 > t_.size()) fail("bad \\u");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = t_[i_++];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) fail("bad \\u digit");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }
  [[noreturn]] void fail(const std::string& m) {
    throw std::runtime_error("JSON: " + m + " at " + std::to_string(i_));
  }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r'))
      ++i_;
  }
  bool lit(const char* w) {
    std::string s(w);
    if (t_.compare(i_, s.size(), s) == 0) {
      i_ += s.size();
      return true;
    }
    return false;
  }
  // Steps over an object's or array's opening bracket; true (and past `close`) where it is
  // empty.
  bool opens_empty(char close) {
    ++i_;
    ws();
    if (t_[i_] != close) return false;
    ++i_;
    return true;
  }
  // After an element: true past a ',' (another follows), false past `close`; else throws.
  bool another_element(char close) {
    ws();
    if (t_[i_] != ',' && t_[i_] != close) fail(std::string("expected , or ") + close);
    return t_[i_++] == ',';
  }
  std::string str() {
    if (t_[i_] != '"') fail("expected string");
    ++i_;
    std::string out;
    while (i_ < t_.size() && t_[i_] != '"') {
      char c = t_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c == '\\') {
        if (i_ >= t_.size()) fail("bad escape");
        char e = t_[i_++];
        if (e == 'u') {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
            if (i_ + 2 > t_.size() || t_[i_] != '\\' || t_[i_ + 1] != 'u') fail("lone surrogate");
            i_ += 2;
            const uint32_t lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          utf8_append(out, cp);
        } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
          fail("bad escape");
        } else {
          out += e == 'n'   ? '\n'
                 : e == 't' ? '\t'
                 : e == 'r' ? '\r'
                 : e == 'b' ? '\b'
                 : e == 'f' ? '\f'
                            : e;
        }
      } else {
        out += c;
      }
    }
    if (i_ >= t_.size()) fail("unterminated string");
    ++i_;
    return out;
  }
  Json value() {
    ws();
    if (i_ >= t_.size()) fail("unexpected end");
    Json v;
    char c = t_[i_];
    if (c == '{') {
      v.kind = Json::Kind::object;
      if (opens_empty('}')) return v;
      do {
        ws();
        std::string k = str();
        ws();
        if (t_[i_++] != ':') fail("expected :");
        v.o[k] = value();
      } while (another_element('}'));
      return v;
    }
    if (c == '[') {
      v.kind = Json::Kind::array;
      if (opens_empty(']')) return v;
      do {
        v.a.push_back(value());
      } while (another_element(']'));
      return v;
    }
    if (c == '"') {
      v.kind = Json::Kind::string;
      v.s = str();
      return v;
    }
    if (lit("true")) {
      v.kind = Json::Kind::boolean;
      v.b = true;
      return v;
    }
    if (lit("false")) {
      v.kind = Json::Kind::boolean;
      return v;
    }
    if (lit("null")) return v;
    const char* start = t_.c_str() + i_;
    char* end = nullptr;
    v.n = std::strtod(start, &end);
    if (end == start) fail("unexpected character");
    v.kind = Json::Kind::number;
    i_ += static_cast<size_t>(end - start);
    return v;
  }
  const std::string& t_;
  size_t i_ = 0;
};

inline Json parse_json(const std::string& text) {
  return JsonParser(text).parse();
}

}  // namespace specd::test
