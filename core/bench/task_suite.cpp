#include "bench/task_suite.hpp"

#include <toml++/toml.h>

#include "common/error.hpp"
#include "config/toml_text.hpp"

namespace specd::bench {

TaskSuite load_task_suite(const std::string& path) {
  const toml::table t = parse_toml_file(path, "task suite");
  TaskSuite s;
  s.name = t["name"].value<std::string>().value_or("");
  s.kind = t["kind"].value<std::string>().value_or("");
  s.description = t["description"].value<std::string>().value_or("");
  if (auto v = t["max_tokens"].value<int64_t>()) s.max_tokens = static_cast<uint32_t>(*v);
  if (const toml::array* a = t["prompts"].as_array())
    for (const auto& p : *a)
      if (auto v = p.value<std::string>()) s.prompts.push_back(*v);
  if (s.name.empty()) throw UsageError(path + ": a task needs a name");
  if (s.prompts.empty()) throw UsageError(path + ": a task needs at least one prompt");
  if (s.max_tokens < 1) throw UsageError(path + ": max_tokens must be at least 1");
  return s;
}

}  // namespace specd::bench
