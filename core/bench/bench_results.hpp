// What a bench run measured: per arm (plain decoding first) and per cell (task ×
// temperature), the aggregates of docs/BENCH.md. Filled by the runner, read by the reports.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace specd::bench {

struct CellResult {
  std::string task;
  double temperature = 0;
  std::string note;         // e.g. "constructed model 0.1b f16"
  std::string target_type;  // the target's weight preset on the precision axis ("" = as given)
  std::string base_task;    // the task without the target type
  std::string verdict;      // the audit's verdict for the arm's rule at this sampling
  uint32_t prompts = 0, repeats = 0;
  double tau = 0;              // Σ generated / Σ rounds
  double acceptance_rate = 0;  // Σ accepted / Σ drafted
  std::vector<double> per_position;
  double mean_k = 0;        // drafted tokens per round
  double tokens_per_s = 0;  // median over runs
  double ttft_s = 0;        // median time to the first text piece (prefill included)
  double peak_rss_mb = 0;   // process peak resident memory after the arm's runs
  double speedup = 1;       // median over prompts of the paired per-prompt ratio
  std::pair<double, double> speedup_ci{1, 1};  // bootstrap 95% of that median
  double speedup_of_medians = 1;               // median tok/s ÷ plain's median tok/s
  double tau_over_speedup = 0;
  double verify_cost = 1;  // v(k) measured
  double draft_cost = 0;   // c measured
  double predicted_speedup = 1;
  // The same cost with the measured τ in place of E(α, k): acceptance is rarely i.i.d.
  // per token, and the gap between the two says how bursty it is.
  double predicted_from_tau = 1;
  // ab: against the first arm (paired the same way); 1 for the first arm itself.
  double speedup_vs_first = 1;
  std::pair<double, double> speedup_vs_first_ci{1, 1};
  // Raw per-run numbers, in run order: prompt index, repeat, tokens/s.
  std::vector<double> run_tokens_per_s;
  uint64_t generated = 0, rounds = 0, drafted = 0, accepted = 0;
  // At temperature 0, with a rule labelled exact or greedy-exact, every run's tokens are
  // compared with plain decoding's for the same prompt and repeat: runs compared, and how
  // many differed (which would be a bug). 0 compared elsewhere.
  uint32_t output_compared = 0, output_differs = 0;
  double draft_s = 0, verify_s = 0, accept_s = 0, commit_s = 0, generate_s = 0;
};

struct ArmResult {
  std::string name;
  std::string strategy;  // proposer kind ("none" for plain)
  std::string rule;      // "" for plain
  std::string k;         // configured k
  std::string label;     // the rule's declared label ("exact" for plain)
  std::string verdict;   // the audit's verdict for the rule at the cell's sampling
  bool lossy = false;
  std::string draft_type;  // the draft's weight preset on the precision axis ("" = as given)
  std::string base_name;   // the arm's name without the draft type
  std::vector<std::string> overrides;
  std::vector<CellResult> cells;
};

struct MachineInfo {
  std::string cpu_model;
  uint32_t cores = 0;  // online logical CPUs
  int threads = 0;     // [engine] threads used
  std::string backend;
};

struct BenchResults {
  std::string mode;  // "bench" or "ab"
  std::string config_path, config_text;
  MachineInfo machine;
  std::vector<std::string> notes;
  std::vector<ArmResult> arms;  // arms[0] is plain decoding
  double wall_s = 0;
};

}  // namespace specd::bench
