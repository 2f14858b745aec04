// A bench task: a fixed list of prompts and an output length (bench/tasks/*.toml, written
// by bench/tasks/make_tasks.py from held-out corpus files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace specd::bench {

struct TaskSuite {
  std::string name;  // "code", "prose", ...
  std::string kind;  // "code-completion", ...
  std::string description;
  uint32_t max_tokens = 64;
  std::vector<std::string> prompts;
};

// Throws UsageError naming the file for a missing file or a malformed task.
TaskSuite load_task_suite(const std::string& path);

}  // namespace specd::bench
