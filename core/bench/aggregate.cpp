#include "bench/aggregate.hpp"

#include <map>
#include <utility>

#include "bench/bootstrap_intervals.hpp"
#include "bench/prediction.hpp"

namespace specd::bench {

std::vector<double> paired_ratios(const std::vector<RunSample>& arm,
                                  const std::vector<RunSample>& base) {
  std::map<std::pair<size_t, uint32_t>, double> base_tps;
  for (const RunSample& s : base) base_tps[{s.prompt, s.repeat}] = s.stats.tokens_per_s();
  std::map<size_t, std::vector<double>> per_prompt;
  for (const RunSample& s : arm) {
    auto it = base_tps.find({s.prompt, s.repeat});
    if (it == base_tps.end() || it->second <= 0) continue;
    per_prompt[s.prompt].push_back(s.stats.tokens_per_s() / it->second);
  }
  std::vector<double> out;
  for (auto& [prompt, ratios] : per_prompt) out.push_back(median(ratios));
  return out;
}

CellResult aggregate_cell(const std::vector<RunSample>& arm, const std::vector<RunSample>& plain,
                          bool is_plain) {
  CellResult c;
  std::vector<double> tps, ttft;
  std::vector<uint64_t> drafted_at, accepted_at;
  for (const RunSample& s : arm) {
    const GenerationStats& g = s.stats;
    tps.push_back(g.tokens_per_s());
    ttft.push_back(s.ttft_s);
    c.run_tokens_per_s.push_back(g.tokens_per_s());
    c.generated += g.generated_tokens;
    c.rounds += g.rounds;
    c.drafted += g.drafted;
    c.accepted += g.accepted;
    c.draft_s += g.draft_s;
    c.verify_s += g.verify_s;
    c.accept_s += g.accept_s;
    c.commit_s += g.commit_s;
    c.generate_s += g.generate_s;
    if (drafted_at.size() < g.drafted_at.size()) {
      drafted_at.resize(g.drafted_at.size(), 0);
      accepted_at.resize(g.drafted_at.size(), 0);
    }
    for (size_t d = 0; d < g.drafted_at.size(); ++d) {
      drafted_at[d] += g.drafted_at[d];
      accepted_at[d] += g.accepted_at[d];
    }
  }
  c.tau = c.rounds ? double(c.generated) / double(c.rounds) : 0;
  c.acceptance_rate = c.drafted ? double(c.accepted) / double(c.drafted) : 0;
  for (size_t d = 0; d < drafted_at.size(); ++d)
    c.per_position.push_back(drafted_at[d] ? double(accepted_at[d]) / double(drafted_at[d]) : 0);
  c.mean_k = c.rounds ? double(c.drafted) / double(c.rounds) : 0;
  c.tokens_per_s = median(tps);
  c.ttft_s = median(ttft);
  if (is_plain) {
    c.tau_over_speedup = c.tau;
    return c;
  }

  const std::vector<double> ratios = paired_ratios(arm, plain);
  c.speedup = median(ratios);
  c.speedup_ci = bootstrap_median_ci(ratios);
  std::vector<double> plain_tps;
  uint64_t plain_generated = 0, plain_rounds = 0;
  double plain_verify_s = 0, plain_generate_s = 0;
  for (const RunSample& s : plain) {
    plain_tps.push_back(s.stats.tokens_per_s());
    plain_generated += s.stats.generated_tokens;
    plain_rounds += s.stats.rounds;
    plain_verify_s += s.stats.verify_s;
    plain_generate_s += s.stats.generate_s;
  }
  const double plain_median = median(plain_tps);
  c.speedup_of_medians = plain_median > 0 ? c.tokens_per_s / plain_median : 0;
  c.tau_over_speedup = c.speedup > 0 ? c.tau / c.speedup : 0;
  // v(k): a pass over k+1 rows against a 1-row pass, both as measured in this cell.
  const double one_row_s = plain_rounds ? plain_verify_s / double(plain_rounds) : 0;
  const double k_rows_s = c.rounds ? c.verify_s / double(c.rounds) : 0;
  c.verify_cost = one_row_s > 0 ? k_rows_s / one_row_s : 0;
  // c: draft time per drafted token against plain decoding's time per token.
  const double plain_token_s = plain_generated ? plain_generate_s / double(plain_generated) : 0;
  c.draft_cost = c.drafted && plain_token_s > 0 ? c.draft_s / double(c.drafted) / plain_token_s : 0;
  c.predicted_speedup = predicted_speedup(c.acceptance_rate, c.mean_k, c.verify_cost, c.draft_cost);
  const double round_cost = c.verify_cost + c.mean_k * c.draft_cost;
  c.predicted_from_tau = round_cost > 0 ? c.tau / round_cost : 0;
  return c;
}

void pair_with_first(CellResult& cell, const std::vector<RunSample>& arm,
                     const std::vector<RunSample>& first) {
  const std::vector<double> ratios = paired_ratios(arm, first);
  cell.speedup_vs_first = median(ratios);
  cell.speedup_vs_first_ci = bootstrap_median_ci(ratios);
}

std::string worst_verdict(const ArmResult& arm) {
  auto rank = [](const std::string& v) {
    if (v == "label-wrong") return 4;
    if (v.rfind("audit failed", 0) == 0 || v == "error") return 3;
    if (v == "lossy") return 2;
    if (v == "lossless" || v == "not-rejected") return 1;
    return 0;
  };
  std::string worst = arm.cells.empty() ? "" : arm.cells[0].verdict;
  for (const CellResult& c : arm.cells)
    if (rank(c.verdict) > rank(worst)) worst = c.verdict;
  return worst;
}

}  // namespace specd::bench
