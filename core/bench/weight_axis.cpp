#include "bench/weight_axis.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "bench/weight_copy.hpp"
#include "common/error.hpp"
#include "common/json_writer.hpp"
#include "config/config.hpp"

namespace specd::bench {
namespace {

namespace fs = std::filesystem;

// dir/<stem>-<8 hex digits of the source's absolute path>-<preset>.gguf, written if needed;
// a note says what its matrices became.
std::string copy_of(const std::string& model, const std::string& preset, const std::string& dir,
                    const std::string& role, RunPlan& plan) {
  const std::string absolute = fs::absolute(model).lexically_normal().string();
  char tag[16];
  std::snprintf(tag, sizeof tag, "%08x",
                static_cast<unsigned>(std::hash<std::string>{}(absolute)&0xffffffffu));
  const std::string out =
      (fs::path(dir) / (fs::path(model).stem().string() + "-" + tag + "-" + preset + ".gguf"))
          .string();
  if (ensure_weight_copy(model, out, weight_preset(preset)))
    std::fprintf(stderr, "wrote %s (%s)\n", out.c_str(), preset.c_str());
  const std::string note = role + " " + fs::path(model).filename().string() + " in " + preset +
                           ": " + matrix_type_summary(out);
  if (std::find(plan.notes.begin(), plan.notes.end(), note) == plan.notes.end())
    plan.notes.push_back(note);
  return out;
}

}  // namespace

void apply_weight_axis(RunPlan& plan, const BenchConfig& config, const std::string& dir) {
  if (config.target_types.empty() && config.draft_types.empty()) return;
  fs::create_directories(dir);
  const std::string file = config.path.empty() ? "<bench>" : config.path;

  if (!config.target_types.empty()) {
    std::vector<CellPlan> cells;
    for (const CellPlan& cell : plan.cells) {
      const Config base = cell_config(plan, cell, nullptr);
      if (base.target.model.empty())
        throw UsageError(file +
                         ": [bench] target_types needs a target model ([base.target] model)");
      for (const std::string& type : config.target_types) {
        CellPlan c = cell;
        c.task = cell.task + " · target " + type;
        c.target_type = type;
        c.base_task = cell.task;
        c.overrides.push_back("target.model=" +
                              json_quote(copy_of(base.target.model, type, dir, "target", plan)));
        cells.push_back(std::move(c));
      }
    }
    plan.cells = std::move(cells);
  }

  if (!config.draft_types.empty()) {
    std::vector<ArmSpec> arms;
    bool any = false;
    for (const ArmSpec& arm : plan.arms) {
      const Config armed = cell_config(plan, plan.cells.front(), &arm);
      if (armed.proposer.kind == "none" || armed.proposer.model.empty()) {
        arms.push_back(arm);  // nothing to quantize (ngram, ...): runs once
        continue;
      }
      any = true;
      for (const std::string& type : config.draft_types) {
        ArmSpec a = arm;
        a.base_name = arm.name;
        a.name = arm.name + " · draft " + type;
        a.draft_type = type;
        a.overrides.push_back("proposer.model=" +
                              json_quote(copy_of(armed.proposer.model, type, dir, "draft", plan)));
        arms.push_back(std::move(a));
      }
    }
    if (!any) throw UsageError(file + ": [bench] draft_types needs an arm with a proposer model");
    plan.arms = std::move(arms);
  }
}

}  // namespace specd::bench
