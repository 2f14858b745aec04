#include "bench/report_json.hpp"

#include "bench/rule_audit.hpp"
#include "common/json_writer.hpp"

namespace specd::bench {
namespace {

void pair(JsonWriter& w, const char* key, std::pair<double, double> v) {
  w.key(key).begin_array().value(v.first).value(v.second).end_array();
}

void cell_json(JsonWriter& w, const CellResult& c) {
  w.begin_object();
  w.key("task").value(c.task);
  w.key("temperature").value(c.temperature);
  if (!c.note.empty()) w.key("note").value(c.note);
  if (!c.target_type.empty()) w.key("target_type").value(c.target_type);
  w.key("base_task").value(c.base_task.empty() ? c.task : c.base_task);
  w.key("verdict").value(c.verdict);
  w.key("prompts").value(c.prompts);
  w.key("repeats").value(c.repeats);
  w.key("tau").value(c.tau);
  w.key("acceptance_rate").value(c.acceptance_rate);
  w.key("per_position").begin_array();
  for (double v : c.per_position) w.value(v);
  w.end_array();
  w.key("mean_k").value(c.mean_k);
  w.key("tokens_per_s").value(c.tokens_per_s);
  w.key("ttft_s").value(c.ttft_s);
  w.key("peak_rss_mb").value(c.peak_rss_mb);
  w.key("speedup").value(c.speedup);
  pair(w, "speedup_ci", c.speedup_ci);
  w.key("speedup_of_medians").value(c.speedup_of_medians);
  w.key("tau_over_speedup").value(c.tau_over_speedup);
  w.key("verify_cost").value(c.verify_cost);
  w.key("draft_cost").value(c.draft_cost);
  w.key("predicted_speedup").value(c.predicted_speedup);
  w.key("predicted_from_tau").value(c.predicted_from_tau);
  w.key("speedup_vs_first").value(c.speedup_vs_first);
  w.key("output_compared").value(c.output_compared);
  w.key("output_differs").value(c.output_differs);
  pair(w, "speedup_vs_first_ci", c.speedup_vs_first_ci);
  w.key("totals").begin_object();
  w.key("generated").value(c.generated).key("rounds").value(c.rounds);
  w.key("drafted").value(c.drafted).key("accepted").value(c.accepted);
  w.key("draft_s").value(c.draft_s).key("verify_s").value(c.verify_s);
  w.key("accept_s").value(c.accept_s).key("commit_s").value(c.commit_s);
  w.key("generate_s").value(c.generate_s);
  w.end_object();
  w.key("run_tokens_per_s").begin_array();
  for (double v : c.run_tokens_per_s) w.value(v);
  w.end_array();
  w.end_object();
}

}  // namespace

std::string format_report_json(const BenchResults& r) {
  JsonWriter w;
  w.begin_object();
  w.key("mode").value(r.mode);
  w.key("config_path").value(r.config_path);
  w.key("config").value(r.config_text);
  w.key("machine").begin_object();
  w.key("cpu_model").value(r.machine.cpu_model);
  w.key("cores").value(r.machine.cores);
  w.key("threads").value(r.machine.threads);
  w.key("backend").value(r.machine.backend);
  w.end_object();
  w.key("method").begin_object();
  w.key("speedup").value(
      "median over prompts of per-prompt paired ratios of tokens/s (arm ÷ plain, same prompt, "
      "repeat and seed; median over repeats)");
  w.key("speedup_ci")
      .value("95% percentile bootstrap of that median, resampling prompts (2000 resamples)");
  w.key("predicted_speedup")
      .value(
          "E/(v(k)+k·c), E=(1-α^(k+1))/(1-α), k = drafted per round, v = verify time per round ÷ "
          "plain's, c = draft time per drafted token ÷ plain's time per token");
  w.key("peak_rss_mb")
      .value("process peak resident memory (getrusage) after the arm's runs of the cell");
  w.end_object();
  w.key("notes").begin_array();
  for (const auto& n : r.notes) w.value(n);
  w.end_array();
  w.key("wall_s").value(r.wall_s);
  w.key("arms").begin_array();
  for (const ArmResult& a : r.arms) {
    w.begin_object();
    w.key("name").value(a.name);
    w.key("strategy").value(a.strategy);
    w.key("rule").value(a.rule);
    w.key("k").value(a.k);
    w.key("label").value(a.label);
    w.key("verdict").value(a.verdict);
    w.key("lossy").value(a.lossy);
    w.key("mark").value(a.lossy ? "⚠ lossy" : "");
    if (!a.draft_type.empty()) w.key("draft_type").value(a.draft_type);
    w.key("base_name").value(a.base_name.empty() ? a.name : a.base_name);
    w.key("overrides").begin_array();
    for (const auto& o : a.overrides) w.value(o);
    w.end_array();
    w.key("cells").begin_array();
    for (const CellResult& c : a.cells) cell_json(w, c);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace specd::bench
