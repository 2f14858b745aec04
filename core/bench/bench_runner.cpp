#include "bench/bench_runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "bench/aggregate.hpp"
#include "bench/machine_info.hpp"
#include "bench/progress_bar.hpp"
#include "bench/task_suite.hpp"
#include "common/error.hpp"
#include "engine/engine.hpp"
#include "engine/plugin_checks.hpp"

namespace specd::bench {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string format_temperature(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", t);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

// One prompt's seed for every arm: common random numbers across arms.
uint64_t run_seed(uint64_t base, size_t prompt, uint32_t repeat) {
  return base * 1000003ull + prompt * 1009ull + repeat;
}

// Greedy output must equal plain greedy output token for token (batch invariance).
void compare_outputs(CellResult& c, const std::vector<RunSample>& arm,
                     const std::vector<RunSample>& plain) {
  for (const RunSample& a : arm)
    for (const RunSample& p : plain)
      if (p.prompt == a.prompt && p.repeat == a.repeat) {
        ++c.output_compared;
        c.output_differs += a.tokens != p.tokens;
      }
}

}  // namespace

RunPlan plan_from_config(const BenchConfig& config, const std::string& mode) {
  RunPlan plan;
  plan.mode = mode;
  plan.config_path = config.path;
  plan.config_text = config.text;
  plan.base_overrides = config.base_overrides;
  plan.arms = config.arms;
  plan.repeats = config.repeats;
  plan.seed = config.seed;
  for (size_t i = 0; i < config.task_files.size(); ++i) {
    TaskSuite task = load_task_suite(config.task_files[i]);
    if (config.prompts && task.prompts.size() > config.prompts) task.prompts.resize(config.prompts);
    const bool own = i < config.task_temperatures.size() && !config.task_temperatures[i].empty();
    for (double t : own ? config.task_temperatures[i] : config.temperatures) {
      CellPlan cell;
      cell.task = task.name;
      cell.prompts = task.prompts;
      cell.max_tokens = config.max_tokens ? config.max_tokens : task.max_tokens;
      cell.temperature = t;
      plan.cells.push_back(cell);
    }
  }
  return plan;
}

Config cell_config(const RunPlan& plan, const CellPlan& cell, const ArmSpec* arm) {
  // Fixed-length outputs by default: every arm times the same number of tokens.
  std::vector<std::string> all = {"sampling.ignore_eos=true"};
  all.insert(all.end(), plan.base_overrides.begin(), plan.base_overrides.end());
  all.insert(all.end(), cell.overrides.begin(), cell.overrides.end());
  all.push_back("sampling.temperature=" + format_temperature(cell.temperature));
  all.push_back("sampling.max_tokens=" + std::to_string(cell.max_tokens));
  if (arm) {
    all.insert(all.end(), arm->overrides.begin(), arm->overrides.end());
  } else {
    all.push_back("proposer.kind=\"none\"");
  }
  return parse_config("", plan.config_path.empty() ? "<bench>" : plan.config_path, all);
}

void check_plan(const RunPlan& plan, const PluginRegistry& registry) {
  const std::string file = plan.config_path.empty() ? "<bench>" : plan.config_path;
  for (const CellPlan& cell : plan.cells) {
    for (const ArmSpec& arm : plan.arms) {
      if (!cell.arm_filter.empty() &&
          !std::count(cell.arm_filter.begin(), cell.arm_filter.end(), arm.name))
        continue;
      try {
        check_config_plugins(cell_config(plan, cell, &arm), registry);
      } catch (const UsageError& e) {
        // The cell's temperature is set by the bench, not by an override the user wrote.
        std::string what = e.what();
        const std::string set_here = "--set sampling.temperature: ";
        if (what.rfind(set_here, 0) == 0) what.erase(0, set_here.size());
        char t[32];
        std::snprintf(t, sizeof t, "%g", cell.temperature);
        throw UsageError(file + ": arm '" + arm.name + "', task " + cell.task + " at temperature " +
                         t + ": " + what);
      }
    }
  }
}

BenchResults run_bench(const RunPlan& plan, const PluginRegistry& registry,
                       RuleAuditCache& audits) {
  check_plan(plan, registry);
  const auto start = Clock::now();
  BenchResults out;
  out.mode = plan.mode;
  out.config_path = plan.config_path;
  out.config_text = plan.config_text;
  out.machine = describe_machine();
  out.notes = plan.notes;
  out.arms.resize(plan.arms.size() + 1);
  out.arms[0].name = "plain";
  out.arms[0].strategy = "none";
  out.arms[0].k = "0";
  out.arms[0].label = "exact";
  out.arms[0].verdict = "reference";
  for (size_t a = 0; a < plan.arms.size(); ++a) {
    out.arms[a + 1].name = plan.arms[a].name;
    out.arms[a + 1].k = plan.arms[a].k_text;
    out.arms[a + 1].overrides = plan.arms[a].overrides;
    out.arms[a + 1].draft_type = plan.arms[a].draft_type;
    out.arms[a + 1].base_name =
        plan.arms[a].base_name.empty() ? plan.arms[a].name : plan.arms[a].base_name;
  }

  uint64_t total = 0;
  for (const CellPlan& cell : plan.cells) {
    size_t arms = cell.arm_filter.empty() ? plan.arms.size() : cell.arm_filter.size();
    total += cell.prompts.size() * plan.repeats * (arms + 1);
  }
  ProgressBar progress(total);

  for (const CellPlan& cell : plan.cells) {
    // Engines of this cell: index 0 plain, then the arms that run here.
    std::vector<size_t> arm_index = {0};
    for (size_t a = 0; a < plan.arms.size(); ++a)
      if (cell.arm_filter.empty() ||
          std::count(cell.arm_filter.begin(), cell.arm_filter.end(), plan.arms[a].name))
        arm_index.push_back(a + 1);
    std::vector<Config> configs;
    std::vector<std::unique_ptr<Engine>> engines;
    for (size_t i : arm_index) {
      configs.push_back(cell_config(plan, cell, i == 0 ? nullptr : &plan.arms[i - 1]));
      try {
        engines.push_back(std::make_unique<Engine>(configs.back(), registry));
      } catch (const UsageError& e) {
        throw UsageError("arm '" + out.arms[i].name + "', task " + cell.task + ": " + e.what());
      }
    }
    out.machine.threads = configs[0].engine.threads;
    out.machine.backend = engines[0]->backend_name();

    std::vector<std::vector<RunSample>> samples(arm_index.size());
    for (size_t p = 0; p < cell.prompts.size(); ++p) {
      for (uint32_t r = 0; r < plan.repeats; ++r) {
        for (size_t step = 0; step < arm_index.size(); ++step) {
          // ABC… on even repeats, …CBA on odd ones.
          const size_t e = r % 2 == 0 ? step : arm_index.size() - 1 - step;
          Engine& engine = *engines[e];
          engine.reseed(run_seed(plan.seed, p, r));
          RunSample s;
          s.prompt = p;
          s.repeat = r;
          double ttft = -1;
          GenerateOptions options;
          auto t0 = Clock::now();
          options.on_text = [&](const std::string&) {
            if (ttft < 0) ttft = since(t0);
          };
          GenerationResult result = engine.generate(cell.prompts[p], options);
          s.ttft_s = ttft < 0 ? since(t0) : ttft;
          s.stats = result.stats;
          s.tokens = std::move(result.tokens);
          samples[e].push_back(std::move(s));
          progress.step(out.arms[arm_index[e]].name + " · " + cell.task);
        }
      }
    }

    for (size_t e = 0; e < arm_index.size(); ++e) {
      ArmResult& arm = out.arms[arm_index[e]];
      CellResult c = aggregate_cell(samples[e], samples[0], e == 0);
      c.task = cell.task;
      c.temperature = cell.temperature;
      c.note = cell.note;
      c.target_type = cell.target_type;
      c.base_task = cell.base_task.empty() ? cell.task : cell.base_task;
      c.prompts = static_cast<uint32_t>(cell.prompts.size());
      c.repeats = plan.repeats;
      c.peak_rss_mb = peak_rss_mb();
      arm.strategy = engines[e]->proposer_name();
      if (e == 0) {
        c.verdict = "reference";
      } else {
        arm.rule = engines[e]->rule_name();
        try {
          const RuleVerdict& v = audits.verdict(arm.rule, configs[e]);
          arm.label = v.label;
          c.verdict = v.verdict;
        } catch (const std::exception& ex) {
          c.verdict = std::string("audit failed: ") + ex.what();
        }
        if (arm.label == "lossy" || c.verdict == "lossy" || c.verdict == "label-wrong")
          arm.lossy = true;
        if (cell.temperature == 0 && (arm.label == "exact" || arm.label == "greedy-exact"))
          compare_outputs(c, samples[e], samples[0]);
      }
      if (out.mode == "ab" && e >= 2) pair_with_first(c, samples[e], samples[1]);
      arm.cells.push_back(std::move(c));
    }
  }
  progress.finish();
  for (ArmResult& arm : out.arms) arm.verdict = worst_verdict(arm);
  out.wall_s = since(start);
  return out;
}

}  // namespace specd::bench
