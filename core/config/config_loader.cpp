#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>
#include <tuple>

#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/json_text.hpp"
#include "config/config.hpp"
#include "config/config_schema.hpp"
#include "config/did_you_mean.hpp"
#include "config/proposer_kind.hpp"
#include "config/toml_text.hpp"
#include "grammar/gbnf_grammar.hpp"
#include "grammar/json_schema_grammar.hpp"
#include "sampling/sampling_ranges.hpp"
#include "tokenizer/unicode.hpp"

namespace specd {
namespace {

using config_schema::Context;
using config_schema::KeyReader;
using config_schema::SectionSchema;

std::vector<std::string> keys_of(const std::map<std::string, SectionSchema>& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

std::vector<std::string> keys_of(const std::map<std::string, KeyReader>& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  std::string s = did_you_mean(word, candidates);
  return s.empty() ? "" : " (did you mean '" + s + "'?)";
}

// Applies one "section.key=value" override to the parsed table.
void apply_override(Context& c, toml::table& root, const std::string& text) {
  std::string where = "--set " + text;
  size_t eq = text.find('=');
  size_t dot = text.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot > eq || dot == 0 ||
      dot + 1 == eq) {
    c.problems.add(where, "expected section.key=value");
    return;
  }
  std::string section = text.substr(0, dot);
  std::string key = text.substr(dot + 1, eq - dot - 1);
  std::string value = text.substr(eq + 1);
  toml::table* table = root[section].as_table();
  if (!table) {
    if (root.contains(section)) {
      c.problems.add(where, "'" + section + "' is not a table");
      return;
    }
    root.insert(section, toml::table{});
    table = root[section].as_table();
  }
  bool parsed_as_toml = false;
  const std::string value_text = "v = " + value;
  if (find_deep_nesting(value_text).line != 0) {
    c.problems.add("--set " + section + "." + key,
                   "the value nests deeper than " + std::to_string(kMaxTomlNesting) + " levels");
    return;
  }
  try {
    toml::table parsed = toml::parse(value_text);
    if (parsed.size() != 1) {
      // "1\n[plugins]\npaths = [...]": one option must not set other keys on the side.
      c.problems.add("--set " + section + "." + key,
                     "the value holds more than one TOML value (a line break?); write a "
                     "line break inside a string as \\n");
      return;
    }
    if (const toml::node* v = parsed.get("v")) {
      if (toml_holds_nul(*v)) {
        c.problems.add("--set " + section + "." + key,
                       "the value holds a NUL character (\\u0000): no path or text may");
        return;
      }
      table->insert_or_assign(key, *v);
      parsed_as_toml = true;
    }
  } catch (const toml::parse_error&) {
  }
  if (!parsed_as_toml && value.find_first_of("\r\n") != std::string::npos) {
    c.problems.add("--set " + section + "." + key,
                   "the value holds a line break; write it inside a TOML string as \\n");
    return;
  }
  if (!parsed_as_toml) table->insert_or_assign(key, value);  // not TOML: take it as a string
  c.override_locations[table->get(key)] = "--set " + section + "." + key;
}

void walk(Context& c, toml::table& root) {
  Config& cfg = *c.config;
  auto schema = config_schema::make_schema(cfg);
  for (auto& [section_key, node] : root) {
    std::string section(section_key.str());
    auto it = schema.find(section);
    if (it == schema.end()) {
      c.add(section_key,
            "unknown section '" + section + "'" + suggestion(section, keys_of(schema)));
      continue;
    }
    toml::table* table = node.as_table();
    if (!table) {
      c.add(node, "'" + section + "' must be a table ([" + section + "])");
      continue;
    }
    SectionSchema& s = it->second;
    for (auto& [key_name, value] : *table) {
      std::string key(key_name.str());
      cfg.locations[section + "." + key] = c.where(value);
      auto reader = s.keys.find(key);
      if (reader != s.keys.end()) {
        reader->second(c, key, value);
      } else if (s.passes_unknown_to_plugin) {
        s.plugin_params->push_back(config_schema::to_param(c, key, value));
      } else {
        c.add(key_name,
              "unknown key '" + key + "' in [" + section + "]" + suggestion(key, keys_of(s.keys)));
      }
    }
  }
}

// Relative model paths are relative to the configuration file's folder.
void resolve_paths(Config& cfg) {
  if (cfg.path.empty()) return;
  namespace fs = std::filesystem;
  fs::path base = fs::path(cfg.path).parent_path();
  auto resolve = [&](std::string& p) {
    if (!p.empty() && fs::path(p).is_relative() && !fs::exists(p)) {
      fs::path candidate = base / p;
      if (fs::exists(candidate)) p = candidate.lexically_normal().string();
    }
  };
  resolve(cfg.target.model);
  resolve(cfg.proposer.model);
  resolve(cfg.server.chat_template_file);
  resolve(cfg.sampling.grammar_file);
  resolve(cfg.sampling.json_schema_file);
  // Plugin paths are code the run executes: relative to the configuration file only, never
  // to whatever folder the command happens to run in.
  for (auto& p : cfg.plugins.paths)
    if (!p.empty() && fs::path(p).is_relative()) p = (base / p).lexically_normal().string();
}

// [sampling] grammar, grammar_file or json_schema_file: checked now, so that a bad grammar
// is reported with the configuration's other problems (and by check-config).
void load_grammar(Config& cfg) {
  SamplingConfig& s = cfg.sampling;
  const int given = !s.grammar.empty() + !s.grammar_file.empty() + !s.json_schema_file.empty();
  if (given > 1)
    throw UsageError(cfg.where("sampling.grammar_file") +
                     ": give one of [sampling] grammar, grammar_file and json_schema_file");
  std::string where = cfg.where("sampling.grammar");
  if (!s.grammar_file.empty()) {
    where = s.grammar_file;
    s.grammar = read_text_file(s.grammar_file, "grammar file", size_t{1} << 20);
  } else if (!s.json_schema_file.empty()) {
    const std::string text =
        read_text_file(s.json_schema_file, "JSON Schema file", size_t{1} << 20);
    nlohmann::json schema;
    try {
      schema = parse_json_text(text, "the file");
    } catch (const JsonTextError& e) {
      throw UsageError(s.json_schema_file + ": " + e.what());
    }
    s.grammar = json_schema_gbnf(schema, s.json_schema_file + ": schema");
    return;
  }
  if (s.grammar.empty()) return;
  try {
    parse_gbnf(s.grammar);
  } catch (const GrammarError& e) {
    throw UsageError(where + ": " + e.what());
  }
}

Config parse_table(toml::table root, const std::string& name, const std::string& path,
                   const std::vector<std::string>& overrides) {
  Config cfg;
  cfg.path = path;
  Context c{name, {}, {}, &cfg};
  for (const auto& o : overrides) apply_override(c, root, o);
  walk(c, root);
  // When plain decoding is chosen, other proposer keys are ignored (so one file serves
  // both arms of a comparison).
  if (cfg.proposer.kind == "none") cfg.proposer.params.clear();
  // The built-in target verifier takes no keys: one there is a typo or a forgotten kind.
  if (cfg.verifier.kind == "target")
    for (const PluginParam& p : cfg.verifier.params)
      c.problems.add(p.location,
                     "unknown key '" + p.key +
                         "' in [verifier]: the built-in target verifier takes no "
                         "keys (a plugin's keys need its kind, e.g. kind = \"remote\")");
  if (!c.problems.empty()) throw UsageError(c.problems.text());
  resolve_paths(cfg);
  load_grammar(cfg);
  resolve_auto_proposer(cfg);
  return cfg;
}

}  // namespace

std::string Config::where(const std::string& dotted_key) const {
  auto it = locations.find(dotted_key);
  return it != locations.end() ? it->second : (path.empty() ? "<config>" : path);
}

Config parse_config(const std::string& toml_text, const std::string& name,
                    const std::vector<std::string>& overrides) {
  return parse_table(parse_toml_text(toml_text, name), name, "", overrides);
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw UsageError(path + ": no such configuration file");
  return parse_table(parse_toml_file(path, "configuration file"), path, path, overrides);
}

}  // namespace specd

namespace specd {

void check_required_for_run(const Config& config) {
  if (config.target.model.empty())
    throw UsageError((config.path.empty() ? std::string("<config>") : config.path) +
                     ": missing required key 'model' in [target] (a GGUF file)");
}

}  // namespace specd
