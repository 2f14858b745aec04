#include "bench/constructed_sweep.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "bench/constructed_model.hpp"
#include "common/json_writer.hpp"

namespace specd::bench {
namespace {

std::string fmt(double v, const char* f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Prompts of printable text: each starts the walk along the planted cycle somewhere else.
const char* kPrompts[] = {"The", "def f", "x = 1", "Hello", "import", "#", "a", "Q"};

}  // namespace

RunPlan plan_constructed(const BenchConfig& config, const std::string& mode,
                         const std::string& dir) {
  const ConstructSpec& c = config.construct;
  std::filesystem::create_directories(dir);
  RunPlan plan;
  plan.mode = mode;
  plan.config_path = config.path;
  plan.config_text = config.text;
  plan.base_overrides = config.base_overrides;
  plan.repeats = config.repeats;
  plan.seed = config.seed;
  plan.arms = config.arms;  // extra arms (e.g. ngram) run on the constructed targets too
  const bool draft_type_axis = c.draft_types.size() > 1 || c.draft_types.front() != "f16";
  for (double a : c.agreements) {
    for (const std::string& draft_type : c.draft_types) {
      ConstructedSpec draft_spec = constructed_draft(a, c.draft_size);
      draft_spec.weights = draft_type;
      draft_spec.vocab = c.vocab;
      const std::string suffix = draft_type_axis ? "-" + draft_type : "";
      const std::string draft = dir + "/draft-a" + fmt(a, "%.2f") + suffix + ".gguf";
      ensure_constructed_model(draft, draft_spec);
      for (uint32_t k : c.ks) {
        ArmSpec arm;
        arm.name = "agree " + fmt(a, "%.2f") + (draft_type_axis ? " draft " + draft_type : "") +
                   " k=" + std::to_string(k);
        arm.k_text = std::to_string(k);
        arm.base_name = "agree " + fmt(a, "%.2f") + " k=" + std::to_string(k);
        if (draft_type_axis) arm.draft_type = draft_type;
        arm.overrides = {"proposer.kind=\"draft-model\"", "proposer.model=" + json_quote(draft),
                         "proposer.mode=\"greedy\"", "proposer.k=" + std::to_string(k),
                         "acceptance.rule=" + json_quote(c.rule)};
        plan.arms.push_back(arm);
      }
    }
  }
  const uint32_t n_prompts = std::min<uint32_t>(c.prompts ? c.prompts : 4, 8);
  for (const std::string& size : c.sizes) {
    for (const std::string& type : c.types) {
      ConstructedSpec spec = constructed_preset(size);
      spec.weights = type;
      spec.vocab = c.vocab;
      const std::string target = dir + "/target-" + size + "-" + type + ".gguf";
      ensure_constructed_model(target, spec);
      plan.notes.push_back("constructed model " + size + " " + type + ": " +
                           fmt(double(constructed_parameters(spec)) / 1e6, "%.1f") +
                           " M parameters, " + std::to_string(c.vocab) +
                           " tokens, planted next-token map; drafts: " +
                           (c.draft_size.empty() ? std::string("64-wide, 1 layer")
                                                 : "the " + c.draft_size + " shape") +
                           ", agreeing on the stated fraction of the map");
      for (double t : config.temperatures) {
        CellPlan cell;
        cell.task = "constructed-" + size + "-" + type;
        for (uint32_t i = 0; i < n_prompts; ++i) cell.prompts.push_back(kPrompts[i]);
        cell.max_tokens = config.max_tokens ? config.max_tokens : 64;
        cell.temperature = t;
        cell.overrides = {"target.model=" + json_quote(target)};
        cell.note = "constructed model";
        cell.target_type = type;
        cell.base_task = "constructed-" + size;
        plan.cells.push_back(cell);
      }
    }
  }
  return plan;
}

}  // namespace specd::bench
