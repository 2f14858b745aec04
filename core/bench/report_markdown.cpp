#include "bench/report_markdown.hpp"

#include <cstdio>

#include "bench/report_charts.hpp"
#include "bench/report_precision.hpp"

namespace specd::bench {
namespace {

std::string fmt(double v, const char* f = "%.2f") {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string ci(std::pair<double, double> v) {
  std::string s = "[";
  s += fmt(v.first);
  s += ", ";
  s += fmt(v.second);
  s += "]";
  return s;
}

std::string positions(const std::vector<double>& pp) {
  std::string s;
  for (double v : pp) {
    if (!s.empty()) s += ' ';
    s += fmt(v);
  }
  return s.empty() ? "–" : s;
}

// Greedy runs whose output equalled plain decoding's: "24/24", or "–" where not compared.
std::string same_output(const CellResult& c) {
  if (c.output_compared == 0) return "–";
  const std::string s = std::to_string(c.output_compared - c.output_differs) + "/" +
                        std::to_string(c.output_compared);
  return c.output_differs ? "**" + s + " DIFFER**" : s;
}

}  // namespace

std::string format_report_markdown(const BenchResults& r) {
  const std::string suffix = constructed_suffix(r);
  std::string md = "# specd " + r.mode + suffix + "\n\n";
  md += "Config: `" + r.config_path + "`  \n";
  md += "Machine: " + r.machine.cpu_model + ", " + std::to_string(r.machine.cores) +
        " logical CPUs, " + std::to_string(r.machine.threads) + " threads, backend " +
        r.machine.backend + "  \n";
  md += "Wall time: " + fmt(r.wall_s, "%.1f") + " s\n\n";
  for (const auto& n : r.notes) md += "- " + n + "\n";
  md +=
      "\nSpeedup = median over prompts of the paired per-prompt ratio of tokens/s (arm ÷ plain "
      "decoding, same prompt, repeat and seed; the median over repeats per prompt). CI = 95% "
      "percentile bootstrap of that median over prompts. Predicted = E/(v(k)+k·c) from the "
      "measured α, k = drafted tokens per round, v(k) = verify time per round ÷ plain's, "
      "c = draft time per drafted token ÷ plain's time per token; τ/(v+kc) is the same with the "
      "measured τ in place of E (the gap shows how far acceptance is from i.i.d.). Peak memory "
      "is the process's peak so far (getrusage). = plain: at T=0 with an exact or greedy-exact "
      "rule, the runs whose tokens equal plain decoding's (same prompt and repeat).\n\n";

  md +=
      "## Arms\n\n| arm | strategy | rule | k | label | audit verdict "
      "|\n|---|---|---|---|---|---|\n";
  for (const ArmResult& a : r.arms)
    md += "| " + arm_label(a) + " | " + a.strategy + " | " + (a.rule.empty() ? "–" : a.rule) +
          " | " + a.k + " | " + a.label + " | " + a.verdict + " |\n";

  md += "\n## Results" + suffix + "\n\n";
  md +=
      "| arm | cell | verdict | τ | α | per-position | tok/s | TTFT ms | speedup | 95% CI | "
      "τ÷speedup | v(k) | c | predicted | τ/(v+kc) | peak MB | = plain |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ArmResult& a : r.arms)
    for (const CellResult& c : a.cells)
      md += "| " + arm_label(a) + " | " + cell_label(c) + " | " + c.verdict + " | " + fmt(c.tau) +
            " | " + fmt(c.acceptance_rate) + " | " + positions(c.per_position) + " | " +
            fmt(c.tokens_per_s, "%.1f") + " | " + fmt(c.ttft_s * 1000, "%.1f") + " | " +
            fmt(c.speedup) + " | " + ci(c.speedup_ci) + " | " + fmt(c.tau_over_speedup) + " | " +
            fmt(c.verify_cost) + " | " + fmt(c.draft_cost, "%.3f") + " | " +
            fmt(c.predicted_speedup) + " | " + fmt(c.predicted_from_tau) + " | " +
            fmt(c.peak_rss_mb, "%.0f") + " | " + same_output(c) + " |\n";

  if (r.mode == "ab" && r.arms.size() > 2) {
    md += "\n## Pairwise" + suffix + "\n\n";
    md += "Each arm against plain decoding and against the first arm (" + arm_label(r.arms[1]) +
          "), paired per prompt.\n\n";
    md += "| arm | cell | vs plain | 95% CI | vs " + r.arms[1].name +
          " | 95% CI |\n"
          "|---|---|---|---|---|---|\n";
    for (size_t i = 1; i < r.arms.size(); ++i)
      for (const CellResult& c : r.arms[i].cells)
        md += "| " + arm_label(r.arms[i]) + " | " + cell_label(c) + " | " + fmt(c.speedup) +
              "× | " + ci(c.speedup_ci) + " | " + (i == 1 ? "–" : fmt(c.speedup_vs_first) + "×") +
              " | " + (i == 1 ? "–" : ci(c.speedup_vs_first_ci)) + " |\n";
  }
  md += format_precision_tables(r);
  md += "\nCharts: `speedup.svg`, `per_position.svg`, `predicted.svg`.\n";
  return md;
}

}  // namespace specd::bench
