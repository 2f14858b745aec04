// Runs a bench: for every cell (task × temperature) plain decoding and every arm generate
// from the same prompts in the same process, interleaved per prompt and repeat (plain, A, B,
// … then reversed on odd repeats, so slow drift of the machine hits every arm alike), each
// run reseeded with the same seed for every arm (common random numbers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_config.hpp"
#include "bench/bench_results.hpp"
#include "bench/rule_audit.hpp"
#include "plugin/registry.hpp"

namespace specd::bench {

struct CellPlan {
  std::string task;
  std::vector<std::string> prompts;
  uint32_t max_tokens = 64;
  double temperature = 0;
  std::vector<std::string> overrides;   // extra "section.key=value" (e.g. a constructed target)
  std::vector<std::string> arm_filter;  // arms that run in this cell; empty = all
  std::string note;
  std::string target_type;  // the target's weight preset on the precision axis ("" = as given)
  std::string base_task;    // the task without the target type ("" = task)
};

struct RunPlan {
  std::string mode = "bench";  // "bench" or "ab"
  std::string config_path, config_text;
  std::vector<std::string> base_overrides;
  std::vector<ArmSpec> arms;
  std::vector<CellPlan> cells;
  uint32_t repeats = 1;
  uint64_t seed = 1;
  std::vector<std::string> notes;
};

// The plan of an ordinary bench file: its tasks × temperatures.
RunPlan plan_from_config(const BenchConfig& config, const std::string& mode);

// The configuration one arm runs with in one cell ("plain" = plain decoding).
Config cell_config(const RunPlan& plan, const CellPlan& cell, const ArmSpec* arm);

// Checks every arm's configuration in every cell as `specd check-config` does (plugins,
// parameters, the rule against allow_lossy and the cell's temperature), loading no model,
// before anything runs. Throws UsageError naming the bench file, the arm, the task and the
// temperature.
void check_plan(const RunPlan& plan, const PluginRegistry& registry);

// Runs the plan (check_plan first).
BenchResults run_bench(const RunPlan& plan, const PluginRegistry& registry, RuleAuditCache& audits);

}  // namespace specd::bench
