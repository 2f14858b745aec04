// Every TOML text specd reads (run configurations, --set values, bench files, task suites,
// Markov tables) goes through here, so that the same checks guard them all:
//   - nesting (table headers, dotted keys, arrays, inline tables) deeper than
//     kMaxTomlNesting levels is refused before parsing: toml++ recurses per level and a
//     file of a few hundred kilobytes would otherwise overflow the stack;
//   - a string or key holding a NUL character (written "\u0000") is refused: every path
//     and text specd passes on would silently end there.
// Errors are UsageErrors located "name:line:col: ...".
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace specd {

inline constexpr int kMaxTomlNesting = 128;

// Where `text` first nests deeper than `limit` levels ({0, 0} when it does not).
struct TomlPosition {
  uint32_t line = 0;
  uint32_t column = 0;
};
TomlPosition find_deep_nesting(std::string_view text, int limit = kMaxTomlNesting);

// True when a key or string anywhere in `node` holds a NUL character.
bool toml_holds_nul(const toml::node& node);

// Parses `text`; `name` is the file name used in messages.
toml::table parse_toml_text(std::string_view text, const std::string& name);

// Reads (common/file_io.hpp: no blocking on a FIFO, no directories) and parses a file.
// `what` names the file's role in messages ("configuration file", "Markov table").
toml::table parse_toml_file(const std::string& path, const std::string& what);

}  // namespace specd
