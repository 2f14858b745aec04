// Server counters, rendered in Prometheus' text exposition format for GET /metrics.
// Thread-safe: handlers and the scheduler's worker update it concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "batching/step_totals.hpp"

namespace specd::server {

using batching::StepTotals;

class Metrics {
 public:
  void request(const std::string& endpoint, int status);  // one answered request
  void generation(uint64_t prompt_tokens, uint64_t completion_tokens, uint64_t drafted,
                  uint64_t accepted, uint64_t rounds);
  void cancelled();
  // The text for /metrics; `queued` and `running` are the scheduler's gauges now, `steps`
  // its step counters.
  std::string render(size_t queued, size_t running, const StepTotals& steps = {}) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, completion_tokens_ = 0, drafted_ = 0, accepted_ = 0, rounds_ = 0;
  uint64_t cancelled_ = 0;
};

}  // namespace specd::server
