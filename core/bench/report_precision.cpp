#include "bench/report_precision.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace specd::bench {
namespace {

std::string fmt(double v, const char* f) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void add_unique(std::vector<std::string>& list, const std::string& s) {
  if (std::find(list.begin(), list.end(), s) == list.end()) list.push_back(s);
}

std::string base_task(const CellResult& c) {
  return c.base_task.empty() ? c.task : c.base_task;
}

std::string base_name(const ArmResult& a) {
  return a.base_name.empty() ? a.name : a.base_name;
}

// The cell of `arm` for this task, temperature and target type, or null.
const CellResult* find_cell(const ArmResult& arm, const std::string& task, double t,
                            const std::string& target) {
  for (const CellResult& c : arm.cells)
    if (base_task(c) == task && c.temperature == t && c.target_type == target) return &c;
  return nullptr;
}

}  // namespace

std::string format_precision_tables(const BenchResults& r) {
  if (r.arms.empty()) return "";
  bool axis = false;
  for (const ArmResult& a : r.arms) {
    axis = axis || !a.draft_type.empty();
    for (const CellResult& c : a.cells) axis = axis || !c.target_type.empty();
  }
  if (!axis) return "";

  // Cells (task × temperature) and target types in run order, from plain decoding's cells.
  std::vector<std::pair<std::string, double>> cells;
  std::vector<std::string> targets;
  for (const CellResult& c : r.arms[0].cells) {
    if (std::find(cells.begin(), cells.end(), std::make_pair(base_task(c), c.temperature)) ==
        cells.end())
      cells.emplace_back(base_task(c), c.temperature);
    add_unique(targets, c.target_type);
  }
  std::vector<std::string> arm_names;
  for (size_t i = 1; i < r.arms.size(); ++i) add_unique(arm_names, base_name(r.arms[i]));

  std::string md = "\n## Weight precision\n\n";
  md +=
      "Each entry: τ (mean tokens per target pass), then the speedup over plain decoding of "
      "the same target file (median of paired per-prompt ratios). Rows: the target's weight "
      "type; columns: the draft's. Plain decoding's tokens/s per target type in the last "
      "column. Presets follow llama-quantize's per-tensor rules (rows that are not whole "
      "256-blocks fall back as it does).\n";
  for (const std::string& name : arm_names) {
    std::vector<const ArmResult*> arms;
    std::vector<std::string> drafts;
    for (size_t i = 1; i < r.arms.size(); ++i)
      if (base_name(r.arms[i]) == name) {
        arms.push_back(&r.arms[i]);
        drafts.push_back(r.arms[i].draft_type.empty() ? "as given" : r.arms[i].draft_type);
      }
    for (const auto& [task, t] : cells) {
      md += "\n### " + name + " — " + task + ", T=" + fmt(t, "%g") + "\n\n| target \\ draft |";
      for (const std::string& d : drafts) md += " " + d + " |";
      md += " plain tok/s |\n|---|";
      for (size_t i = 0; i <= drafts.size(); ++i) md += "---|";
      md += "\n";
      for (const std::string& target : targets) {
        md += "| " + (target.empty() ? std::string("as given") : target) + " |";
        for (const ArmResult* a : arms) {
          const CellResult* c = find_cell(*a, task, t, target);
          if (c)
            md.append(" ")
                .append(fmt(c->tau, "%.2f"))
                .append(", ")
                .append(fmt(c->speedup, "%.2f"))
                .append("× |");
          else
            md += " – |";
        }
        const CellResult* plain = find_cell(r.arms[0], task, t, target);
        if (plain)
          md.append(" ").append(fmt(plain->tokens_per_s, "%.1f")).append(" |\n");
        else
          md += " – |\n";
      }
    }
  }
  return md;
}

}  // namespace specd::bench
