// A small streaming JSON writer for the CLI's machine-readable output.
//
//   JsonWriter w;  w.begin_object(); w.key("id"); w.value("x"); w.end_object();
//   std::string text = w.str();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(const std::string& v) { return value(std::string_view(v)); }
  JsonWriter& value(double v);  // NaN and infinities become null
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& null();
  // Inserts already-serialised JSON as a value.
  JsonWriter& raw(std::string_view json);

  const std::string& str() const { return out_; }

 private:
  void before_value();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

// JSON string literal for `s` (quotes included); invalid UTF-8 bytes become U+FFFD.
std::string json_quote(std::string_view s);

}  // namespace specd
