#include "bench/bench_config.hpp"

#include <toml++/toml.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "bench/constructed_model.hpp"
#include "bench/weight_presets.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/json_writer.hpp"
#include "config/toml_text.hpp"

namespace specd::bench {
namespace {

namespace fs = std::filesystem;

// TOML text of a value, for a "section.key=value" override.
std::string toml_text(const toml::node& n) {
  if (auto s = n.as_string()) return json_quote(s->get());  // JSON strings are TOML strings
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto f = n.as_floating_point()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", f->get());
    std::string t = buf;
    if (t.find_first_of(".eEn") == std::string::npos) t += ".0";  // stays a float
    return t;
  }
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  if (auto a = n.as_array()) {
    std::string t = "[";
    for (const auto& e : *a) t += (t.size() > 1 ? ", " : "") + toml_text(e);
    return t + "]";
  }
  throw UsageError("inline tables are not supported as override values");
}

// Path relative to the bench file's folder (unless it exists as given).
std::string resolve(const std::string& p, const std::string& config_path) {
  if (p.empty() || fs::path(p).is_absolute() || fs::exists(p)) return p;
  fs::path candidate = fs::path(config_path).parent_path() / p;
  return candidate.lexically_normal().string();
}

// Flattens { section = { key = value } } into "section.key=value" overrides; model paths
// resolve against the bench file.
void flatten(const toml::table& t, const std::string& config_path, const std::string& where,
             std::vector<std::string>& out) {
  for (const auto& [section, node] : t) {
    const toml::table* inner = node.as_table();
    if (!inner)
      throw UsageError(where + ": '" + std::string(section.str()) +
                       "' must be a table of keys (e.g. [base.engine])");
    for (const auto& [key, value] : *inner) {
      std::string dotted = std::string(section.str()) + "." + std::string(key.str());
      std::string text = toml_text(value);
      if ((dotted == "target.model" || dotted == "proposer.model") && value.is_string())
        text = json_quote(resolve(value.as_string()->get(), config_path));
      out.push_back(dotted + "=" + text);
    }
  }
}

template <class T>
std::vector<T> numbers(const toml::node* n, const std::string& what) {
  std::vector<T> out;
  if (!n) return out;
  if (auto a = n->as_array()) {
    for (const auto& e : *a) {
      auto v = e.value<T>();
      if (!v) throw UsageError(what + " must be a list of numbers");
      out.push_back(*v);
    }
  } else if (auto v = n->value<T>()) {
    out.push_back(*v);
  } else {
    throw UsageError(what + " must be a number or a list of numbers");
  }
  return out;
}

std::vector<std::string> strings(const toml::node* n, const std::string& what) {
  std::vector<std::string> out;
  if (!n) return out;
  if (auto s = n->value<std::string>()) return {*s};
  auto a = n->as_array();
  if (!a) throw UsageError(what + " must be a string or a list of strings");
  for (const auto& e : *a) {
    auto v = e.value<std::string>();
    if (!v) throw UsageError(what + " must be a list of strings");
    out.push_back(*v);
  }
  return out;
}

// The shorthand keys of an arm and the config key each sets.
const char* shorthand_key(const std::string& k) {
  if (k == "strategy" || k == "proposer") return "proposer.kind";
  if (k == "model") return "proposer.model";
  if (k == "k") return "proposer.k";
  if (k == "rule") return "acceptance.rule";
  if (k == "allow_lossy") return "acceptance.allow_lossy";
  if (k == "backend") return "engine.backend";
  return nullptr;
}

ArmSpec parse_arm(const toml::table& t, const std::string& path, size_t index) {
  ArmSpec arm;
  const std::string where = path + ": arm " + std::to_string(index + 1);
  for (const auto& [key_name, value] : t) {
    std::string key(key_name.str());
    if (key == "name") {
      arm.name = value.value<std::string>().value_or("");
    } else if (value.is_table()) {
      toml::table one;
      one.insert(key, *value.as_table());
      flatten(one, path, where, arm.overrides);
    } else if (const char* dotted = shorthand_key(key)) {
      std::string text = toml_text(value);
      if (key == "model" && value.is_string())
        text = json_quote(resolve(value.as_string()->get(), path));
      if (key == "k") arm.k_text = value.is_string() ? value.as_string()->get() : text;
      arm.overrides.push_back(std::string(dotted) + "=" + text);
    } else if (key == "set") {
      for (auto& s : strings(&value, where + ": set")) arm.overrides.push_back(s);
    } else {
      throw UsageError(where + ": unknown key '" + key +
                       "' (name, strategy, model, rule, k, backend, allow_lossy, set, or a "
                       "table such as [arm.proposer])");
    }
  }
  if (arm.name.empty()) throw UsageError(where + ": every arm needs a name");
  if (arm.name == "plain") throw UsageError(where + ": 'plain' is the baseline's name");
  if (arm.k_text.empty()) arm.k_text.assign(1, '4');  // the configuration default
  return arm;
}

std::string task_path(const std::string& task, const std::string& tasks_dir) {
  if (task.find('/') != std::string::npos || task.ends_with(".toml")) return task;
  return (fs::path(tasks_dir) / (task + ".toml")).string();
}

}  // namespace

BenchConfig parse_bench_config(const std::string& text, const std::string& path) {
  const toml::table root = parse_toml_text(text, path);
  BenchConfig cfg;
  cfg.path = path;
  cfg.text = text;
  static const std::set<std::string> kTop = {"bench", "base", "arm", "construct"};
  for (const auto& [k, v] : root)
    if (!kTop.count(std::string(k.str())))
      throw UsageError(path + ": unknown section '" + std::string(k.str()) +
                       "' (bench, base, arm, construct)");

  if (const toml::table* b = root["bench"].as_table()) {
    static const std::set<std::string> kKeys = {
        "tasks",      "tasks_dir", "temperatures",  "repeats",      "prompts",
        "max_tokens", "seed",      "audit_samples", "target_types", "draft_types"};
    for (const auto& [k, v] : *b)
      if (!kKeys.count(std::string(k.str())))
        throw UsageError(path + ": unknown key '" + std::string(k.str()) + "' in [bench]");
    const std::string tasks_dir =
        resolve((*b)["tasks_dir"].value_or(std::string("../bench/tasks")), path);
    for (std::string t : strings(b->get("tasks"), path + ": [bench] tasks")) {
      // "name@T" runs that task at temperature T only.
      std::vector<double> own;
      if (size_t at = t.rfind('@'); at != std::string::npos) {
        try {
          own.push_back(std::stod(t.substr(at + 1)));
        } catch (const std::exception&) {
          throw UsageError(path + ": task '" + t + "': expected name@temperature");
        }
        t.resize(at);
      }
      cfg.task_files.push_back(resolve(task_path(t, tasks_dir), path));
      cfg.task_temperatures.push_back(own);
    }
    if (b->get("temperatures"))
      cfg.temperatures = numbers<double>(b->get("temperatures"), path + ": temperatures");
    // Counts are unsigned: a negative value would wrap to billions.
    if (auto v = (*b)["seed"].value<int64_t>(); v && *v < 0)
      throw UsageError(path + ": [bench] seed = " + std::to_string(*v) + " must be >= 0");
    for (const char* key : {"repeats", "prompts", "max_tokens", "audit_samples"})
      if (auto v = (*b)[key].value<int64_t>(); v && (*v < 0 || *v > UINT32_MAX))
        throw UsageError(path + ": [bench] " + key + " = " + std::to_string(*v) +
                         " is out of range (0 to 2^32-1)");
    if (auto v = (*b)["repeats"].value<int64_t>()) cfg.repeats = static_cast<uint32_t>(*v);
    if (auto v = (*b)["prompts"].value<int64_t>()) cfg.prompts = static_cast<uint32_t>(*v);
    if (auto v = (*b)["max_tokens"].value<int64_t>()) cfg.max_tokens = static_cast<uint32_t>(*v);
    if (auto v = (*b)["seed"].value<int64_t>()) cfg.seed = static_cast<uint64_t>(*v);
    if (auto v = (*b)["audit_samples"].value<int64_t>())
      cfg.audit_samples = static_cast<uint64_t>(*v);
    cfg.target_types = strings(b->get("target_types"), path + ": [bench] target_types");
    cfg.draft_types = strings(b->get("draft_types"), path + ": [bench] draft_types");
    for (const auto* list : {&cfg.target_types, &cfg.draft_types})
      for (const std::string& t : *list) {
        try {
          weight_preset(t);
        } catch (const UsageError& e) {
          throw UsageError(path + ": [bench] " +
                           (list == &cfg.target_types ? "target_types" : "draft_types") + ": " +
                           e.what());
        }
      }
  }
  if (cfg.repeats < 1) throw UsageError(path + ": [bench] repeats must be at least 1");
  for (double t : cfg.temperatures)
    if (t < 0) throw UsageError(path + ": temperatures must be >= 0");

  if (const toml::table* b = root["base"].as_table())
    flatten(*b, path, path + ": [base]", cfg.base_overrides);

  if (const toml::array* arms = root["arm"].as_array()) {
    std::set<std::string> names;
    for (size_t i = 0; i < arms->size(); ++i) {
      const toml::table* t = (*arms)[i].as_table();
      if (!t) throw UsageError(path + ": [[arm]] entries must be tables");
      cfg.arms.push_back(parse_arm(*t, path, i));
      if (!names.insert(cfg.arms.back().name).second)
        throw UsageError(path + ": two arms are named '" + cfg.arms.back().name + "'");
    }
  }

  if (const toml::table* c = root["construct"].as_table()) {
    ConstructSpec& s = cfg.construct;
    s.enabled = true;
    s.sizes = strings(c->get("sizes"), path + ": [construct] sizes");
    if (s.sizes.empty()) s.sizes = {"tiny"};
    for (const std::string& size : s.sizes) {
      try {
        constructed_preset(size);  // the sweep's targets are llama models
      } catch (const UsageError& e) {
        throw UsageError(path + ": [construct] sizes: " + e.what());
      }
    }
    s.agreements = numbers<double>(c->get("agreements"), path + ": [construct] agreements");
    if (s.agreements.empty()) s.agreements = {1.0, 0.9, 0.8};
    for (int64_t k : numbers<int64_t>(c->get("k"), path + ": [construct] k"))
      s.ks.push_back(static_cast<uint32_t>(k));
    if (s.ks.empty()) s.ks = {2, 4};
    s.types = strings(c->get("types"), path + ": [construct] types");
    if (s.types.empty()) s.types = {"f16"};
    s.draft_types = strings(c->get("draft_types"), path + ": [construct] draft_types");
    if (s.draft_types.empty()) s.draft_types = {"f16"};
    for (const auto* list : {&s.types, &s.draft_types})
      for (const std::string& t : *list) {
        try {
          weight_preset(t);
        } catch (const UsageError& e) {
          throw UsageError(path + ": [construct] " + (list == &s.types ? "types" : "draft_types") +
                           ": " + e.what());
        }
      }
    if (auto v = (*c)["rule"].value<std::string>()) s.rule = *v;
    if (auto v = (*c)["draft_size"].value<std::string>()) {
      try {
        constructed_draft(1.0, *v);  // a dense size
      } catch (const UsageError& e) {
        throw UsageError(path + ": [construct] draft_size: " + e.what());
      }
      s.draft_size = *v;
    }
    if (auto v = (*c)["vocab"].value<int64_t>()) {
      try {
        check_constructed_vocab(*v < 0 ? 0 : static_cast<uint64_t>(*v));
      } catch (const UsageError& e) {
        throw UsageError(path + ": [construct] vocab: " + e.what());
      }
      s.vocab = static_cast<uint32_t>(*v);
    }
    if (auto v = (*c)["prompts"].value<int64_t>(); v && (*v < 0 || *v > UINT32_MAX))
      throw UsageError(path + ": [construct] prompts = " + std::to_string(*v) +
                       " is out of range (0 to 2^32-1)");
    if (auto v = (*c)["prompts"].value<int64_t>()) s.prompts = static_cast<uint32_t>(*v);
    for (double a : s.agreements)
      if (!(a >= 0 && a <= 1)) throw UsageError(path + ": agreements must lie in [0, 1]");
  } else {
    if (cfg.arms.empty()) throw UsageError(path + ": no [[arm]] to compare with plain decoding");
    if (cfg.task_files.empty()) throw UsageError(path + ": [bench] tasks is empty");
  }
  return cfg;
}

BenchConfig load_bench_config(const std::string& path) {
  return parse_bench_config(read_text_file(path, "bench configuration"), path);
}

}  // namespace specd::bench
