// The bench configuration (`specd bench -c FILE`, `specd ab -c FILE`); schema in
// docs/BENCH.md. One file lists a base run configuration, the arms to compare with plain
// decoding and the grid of tasks × temperatures they run on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace specd::bench {

struct ArmSpec {
  std::string name;
  std::vector<std::string> overrides;  // "section.key=value" over the base configuration
  std::string k_text;                  // the configured k ("4", "auto"), for reports
  std::string draft_type;  // the draft's weight preset on the precision axis ("" = as given)
  std::string base_name;   // the arm's name before the draft type was added ("" = name)
};

// Constructed models (docs/BENCH.md): targets of several sizes that compute a planted
// next-token map, drafts that agree with it on a fraction of tokens.
struct ConstructSpec {
  bool enabled = false;
  std::vector<std::string> sizes;  // "tiny", "0.1b", "0.5b", "1.5b"
  std::vector<double> agreements;  // fraction of tokens where the draft agrees
  std::vector<uint32_t> ks;        // draft lengths
  std::vector<std::string> types;  // weight presets (bench/weight_presets.hpp): f16, q4_K_M, ...
  // The drafts' weight presets, crossed with the targets' (default f16). The small drafts
  // are 64 wide: a k-quant preset falls back as llama-quantize does (q4_K -> q5_0, ...).
  std::vector<std::string> draft_types;
  std::string draft_size;  // "" = the one-layer 64-wide draft; else a preset ("0.1b", ...)
  uint32_t vocab = 264;    // tokens of targets and drafts (constructed_model.hpp)
  std::string rule = "greedy";
  uint32_t prompts = 4;
};

struct BenchConfig {
  std::string path;                         // the file it came from
  std::string text;                         // its text, copied into report.json
  std::vector<std::string> base_overrides;  // [base] flattened to "section.key=value"
  std::vector<ArmSpec> arms;
  std::vector<std::string> task_files;  // resolved paths of task TOML files
  // Per task: its own temperatures ("prose@0.8" in the file); empty = `temperatures`.
  std::vector<std::vector<double>> task_temperatures;
  std::vector<double> temperatures = {0.0};
  uint32_t repeats = 1;
  uint32_t prompts = 0;     // first N prompts of each task; 0 = all
  uint32_t max_tokens = 0;  // 0 = each task's own
  uint64_t seed = 1;
  uint64_t audit_samples = 4000;  // Monte-Carlo runs per audit case
  // Weight precision (bench/weight_axis.hpp): quantized copies of the base target and of
  // every arm's proposer model, one per preset; empty = the files as given.
  std::vector<std::string> target_types, draft_types;
  ConstructSpec construct;
};

// Reads and checks a bench file; throws UsageError "file: message" for mistakes.
BenchConfig load_bench_config(const std::string& path);
BenchConfig parse_bench_config(const std::string& text, const std::string& path);

}  // namespace specd::bench
