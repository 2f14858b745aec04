// Server counters, rendered in Prometheus' text exposition format for GET /metrics.
// Thread-safe: handlers and the scheduler's worker update it concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "batching/step_totals.hpp"
#include "engine/generation_stats.hpp"

namespace specd::server {

using batching::StepTotals;

// The latencies operators chart, as Prometheus histograms (seconds, but `acceptance`: the
// share of a request's drafted tokens accepted).
enum class Latency {
  time_to_first_token,  // from submission to the first generated text
  inter_token,          // between generated tokens (a piece of several counts each token)
  end_to_end,           // from submission to the last token
  queue,                // from submission to admission
  prefill,              // the prompt's processing
  decode,               // everything after the prompt
  acceptance,           // accepted / drafted, per request that drafted
  count_
};

class Metrics {
 public:
  Metrics();
  void request(const std::string& endpoint, int status);  // one answered request
  // `count` observations of `value` (inter-token: each token of a piece).
  void observe(Latency series, double value, uint64_t count = 1);
  // One generation ended: its counters (`prompt_tokens` 0 for a prompt's later choices,
  // counted once).
  void generation(const GenerationStats& stats, uint64_t prompt_tokens, uint64_t completion_tokens);
  void cancelled();
  // The text for /metrics; `queued` and `running` are the scheduler's gauges now, `steps`
  // its step counters. specd's own series (specd_*), then the gateway's (vllm:*, labelled
  // with `model_name`): what the Gateway API Inference Extension's endpoint picker and
  // llm-d read by default, with vLLM's names and meanings (docs/SCALING.md).
  std::string render(size_t queued, size_t running, const StepTotals& steps = {},
                     const std::string& model_name = "") const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, completion_tokens_ = 0, drafted_ = 0, accepted_ = 0, rounds_ = 0;
  uint64_t cancelled_ = 0;
  uint64_t drafts_ = 0;                // rounds that drafted
  std::vector<uint64_t> accepted_at_;  // accepted draft tokens per position
  struct Histogram {
    const std::vector<double>* bounds = nullptr;
    std::vector<uint64_t> counts;  // per bucket (not cumulative), then +Inf
    double sum = 0;
    uint64_t total = 0;
  };
  std::array<Histogram, static_cast<size_t>(Latency::count_)> histograms_;
  void render_gateway(std::ostream& o, size_t queued, size_t running, const StepTotals& steps,
                      const std::string& model_name) const;
};

}  // namespace specd::server
