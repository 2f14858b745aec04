// Malformed configurations in bulk: every `key = value` line of the shipped run
// configurations is mutated in turn (the value replaced by another type, an out-of-range
// number, an empty string, a table; the key misspelt, duplicated or removed) and each
// mutant is loaded as `specd run` would load it. It must either load and build an engine,
// or fail with a specd::Error; a configuration error must point at the mutated line as
// "<file>:<line>:" so that the user knows what to fix, and a runtime one (a model path that
// does not exist) must say where it comes from.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"

using namespace specd;

namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string join(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return text;
}

// `key` and `value` of a `key = value` line (false for anything else).
bool split_assignment(const std::string& line, std::string& key, std::string& value) {
  size_t i = line.find_first_not_of(' ');
  if (i == std::string::npos ||
      !(std::isalpha(static_cast<unsigned char>(line[i])) || line[i] == '_'))
    return false;
  size_t j = i;
  while (j < line.size() && (std::isalnum(static_cast<unsigned char>(line[j])) || line[j] == '_'))
    ++j;
  const size_t eq = line.find_first_not_of(' ', j);
  if (eq == std::string::npos || line[eq] != '=') return false;
  key = line.substr(i, j - i);
  const size_t v = line.find_first_not_of(' ', eq + 1);
  value = v == std::string::npos ? "" : line.substr(v);
  return true;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

struct Mutant {
  std::string what;
  std::vector<std::string> lines;
  bool must_point_at_line;  // a wrong value: the error (if any) must name its line
};

// The mutants of one `key = value` line (index i).
std::vector<Mutant> mutants_of(const std::vector<std::string>& lines, size_t i,
                               const std::string& key) {
  const std::string prefix = lines[i].substr(0, lines[i].find('=') + 1) + " ";
  std::vector<Mutant> out;
  for (const char* value : {"\"text\"", "-1", "0", "99999999999", "1.5", "true", "[1, 2]",
                            "{ a = 1 }", "\"\"", "nan", "\"\xff\xfe\""}) {
    std::vector<std::string> l = lines;
    l[i] = prefix + value;
    out.push_back({key + " = " + value, l, true});
  }
  std::vector<std::string> l = lines;
  l[i] = key + "x" + lines[i].substr(lines[i].find('=') - 1);
  out.push_back({key + " misspelt", l, true});
  l = lines;
  l.insert(l.begin() + static_cast<std::ptrdiff_t>(i), lines[i]);
  out.push_back({key + " twice", l, false});
  l = lines;
  l.erase(l.begin() + static_cast<std::ptrdiff_t>(i));
  out.push_back({key + " removed", l, false});
  return out;
}

}  // namespace

TEST_CASE("every mutated line of a shipped configuration loads or is refused at its line") {
  const std::string dir = test::temp_dir("config-mutation");
  PluginRegistry registry{{}};
  const std::string models_dir = "\"" + SPECD_SOURCE_DIR + "/models/";
  int loaded = 0, refused = 0;
  for (const std::string name : {"default", "ngram", "draft-model", "mtp", "medusa", "eagle"}) {
    std::vector<std::string> lines = lines_of(SPECD_SOURCE_DIR + "/configs/" + name + ".toml");
    // Absolute model paths, so that the mutant can live elsewhere; one thread.
    for (std::string& l : lines) {
      replace_all(l, "\"../models/", models_dir);
      if (l.rfind("threads = ", 0) == 0) l = "threads = 1";
    }
    const std::string path = dir + "/" + name + ".toml";
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string key, value;
      if (!split_assignment(lines[i], key, value)) continue;
      if (std::count(value.begin(), value.end(), '[') !=
          std::count(value.begin(), value.end(), ']'))
        continue;  // the first line of a multi-line array
      for (const Mutant& mutant : mutants_of(lines, i, key)) {
        CAPTURE(name);
        CAPTURE(mutant.what);
        std::ofstream(path) << join(mutant.lines);
        const std::string at_line = path + ":" + std::to_string(i + 1) + ":";
        try {
          Config config = load_config(path, {"sampling.max_tokens=2"});
          check_required_for_run(config);
          Engine engine(config, registry);
          ++loaded;
        } catch (const UsageError& e) {
          const std::string what = e.what();
          INFO("error: ", what);
          CHECK(what.find(path) != std::string::npos);
          if (mutant.must_point_at_line) CHECK(what.find(at_line) != std::string::npos);
          ++refused;
        } catch (const Error& e) {
          // A runtime refusal (a model file that does not exist): it is located in the
          // configuration, or names the proposer and its model.
          const std::string what = e.what();
          INFO("error: ", what);
          CHECK((what.find(path) != std::string::npos ||
                 what.find("proposer '") != std::string::npos));
          ++refused;
        }
      }
    }
  }
  const int total = loaded + refused;
  MESSAGE(total, " mutated configurations: ", loaded, " load, ", refused, " refused");
  CHECK(refused > loaded);
}
