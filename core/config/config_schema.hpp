// The configuration's schema, for the loader (config_loader.cpp): every section's keys and
// the typed reader that checks and stores each (wrong type or out of range: a problem naming
// the file, line and key, the value left as it was). Not for use outside core/config.
#pragma once

#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "config/config.hpp"

namespace specd::config_schema {

// Every problem found, reported together.
class Problems {
 public:
  // `line`/`column` order the report as the file reads (0 for command-line overrides).
  void add(const std::string& where, const std::string& message, uint32_t line = 0,
           uint32_t column = 0) {
    lines_.push_back({line, column, where + ": " + message});
  }
  bool empty() const { return lines_.empty(); }
  std::string text() const {
    auto sorted = lines_;
    std::stable_sort(sorted.begin(), sorted.end(), [](const Line& a, const Line& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    std::string out;
    for (const auto& l : sorted) out += (out.empty() ? "" : "\n") + l.text;
    return out;
  }

 private:
  struct Line {
    uint32_t line, column;
    std::string text;
  };
  std::vector<Line> lines_;
};

struct Context {
  std::string name;  // file name for messages
  std::map<const toml::node*, std::string> override_locations;
  Problems problems;
  Config* config;

  void add(const toml::node& node, const std::string& message) {
    problems.add(where(node), message, node.source().begin.line, node.source().begin.column);
  }
  void add(const toml::key& key, const std::string& message) {
    const auto& src = key.source();
    std::string at = src.begin.line == 0 ? name
                                         : name + ":" + std::to_string(src.begin.line) + ":" +
                                               std::to_string(src.begin.column);
    problems.add(at, message, src.begin.line, src.begin.column);
  }

  std::string where(const toml::node& node) const {
    auto it = override_locations.find(&node);
    if (it != override_locations.end()) return it->second;
    const auto& src = node.source();
    if (src.begin.line == 0) return name;
    return name + ":" + std::to_string(src.begin.line) + ":" + std::to_string(src.begin.column);
  }
};

// "a string", "an integer", ...: a node's type as messages name it.
const char* type_name(const toml::node& node);
// A plugin section's key: its TOML value kept as text with its type (arrays of one type as
// arrays), located for the plugin's messages.
PluginParam to_param(Context& c, const std::string& key, const toml::node& n);

using KeyReader = std::function<void(Context&, const std::string& key, const toml::node&)>;

struct SectionSchema {
  std::map<std::string, KeyReader> keys;
  bool passes_unknown_to_plugin = false;
  std::vector<PluginParam>* plugin_params = nullptr;
};

// The sections and their keys, each reader storing into `cfg`.
std::map<std::string, SectionSchema> make_schema(Config& cfg);

}  // namespace specd::config_schema
