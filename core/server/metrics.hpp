// Server counters, rendered in Prometheus' text exposition format for GET /metrics.
// Thread-safe: handlers and the scheduler's worker update it concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace specd::server {

// The scheduler's steps so far (Scheduler::steps()): how their time divides between drafting,
// the target pass and the per-sequence work after it, and the rows they ran.
struct StepTotals {
  uint64_t steps = 0, rows = 0, prefill_rows = 0, drafted_sequences = 0;
  double seconds = 0, draft_seconds = 0, pass_seconds = 0, rounds_seconds = 0;
  // The prefix cache: prompt rows of admitted sequences (the prompt less its last token) and
  // how many were taken from cached blocks; the target's KV pool now (blocks of 16 rows).
  uint64_t prompt_rows = 0, prefix_hit_rows = 0;
  uint64_t kv_blocks = 0, kv_blocks_free = 0, kv_blocks_cached = 0, kv_evictions = 0;
};

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
