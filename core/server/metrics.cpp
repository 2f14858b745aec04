#include "server/metrics.hpp"

#include <algorithm>
#include <sstream>

namespace specd::server {
namespace {

// Bucket bounds: seconds from a millisecond (a tiny model's token) to two hours, and
// fractions for acceptance.
const std::vector<double> kSeconds = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                      0.15,  0.2,    0.3,   0.4,  0.5,  0.75, 1,    2.5,  5,
                                      7.5,   10,     20,    40,   80,   160,  640,  2560, 7680};
const std::vector<double> kFractions = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1};

struct Series {
  const char* name;
  const char* help;
};

constexpr Series kSeries[] = {
    {"specd_time_to_first_token_seconds",
     "From a request's submission to its first generated text (per choice)."},
    {"specd_inter_token_latency_seconds",
     "Between generated tokens (tokens that come out together share the interval)."},
    {"specd_e2e_request_latency_seconds", "From submission to the last token (per choice)."},
    {"specd_request_queue_time_seconds", "From submission to admission by the scheduler."},
    {"specd_request_prefill_seconds", "Prompt processing per sequence."},
    {"specd_request_decode_seconds", "Generation after the prompt per sequence."},
    {"specd_request_acceptance_ratio",
     "Accepted over drafted tokens, per sequence that drafted (vLLM's acceptance rate)."},
};

}  // namespace

Metrics::Metrics() {
  for (size_t i = 0; i < histograms_.size(); ++i) {
    Histogram& h = histograms_[i];
    h.bounds = i == static_cast<size_t>(Latency::acceptance) ? &kFractions : &kSeconds;
    h.counts.assign(h.bounds->size() + 1, 0);
  }
}

void Metrics::observe(Latency series, double value, uint64_t count) {
  if (!(value >= 0) || count == 0) return;  // NaN or negative: a clock that went back
  std::lock_guard<std::mutex> lock(mutex_);
  Histogram& h = histograms_[static_cast<size_t>(series)];
  const size_t bucket =
      std::lower_bound(h.bounds->begin(), h.bounds->end(), value) - h.bounds->begin();
  h.counts[bucket] += count;
  h.sum += value * static_cast<double>(count);
  h.total += count;
}

void Metrics::request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::generation(const GenerationStats& stats, uint64_t prompt_tokens,
                         uint64_t completion_tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  prompt_tokens_ += prompt_tokens;
  completion_tokens_ += completion_tokens;
  drafted_ += stats.drafted;
  accepted_ += stats.accepted;
  rounds_ += stats.rounds;
  if (!stats.drafted_at.empty()) drafts_ += stats.drafted_at[0];
  if (accepted_at_.size() < stats.accepted_at.size())
    accepted_at_.resize(stats.accepted_at.size(), 0);
  for (size_t d = 0; d < stats.accepted_at.size(); ++d) accepted_at_[d] += stats.accepted_at[d];
}

void Metrics::cancelled() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++cancelled_;
}

std::string Metrics::render(size_t queued, size_t running, const StepTotals& steps,
                            const std::string& model_name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream o;
  o.precision(15);  // sums of seconds: rate() over them needs more than six digits
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n"
      << name << " " << v << "\n";
  };
  o << "# HELP specd_requests_total HTTP requests answered, by endpoint and status.\n"
    << "# TYPE specd_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    o << "specd_requests_total{endpoint=\"" << key.first << "\",status=\"" << key.second << "\"} "
      << n << "\n";
  counter("specd_prompt_tokens_total", "Prompt tokens processed.", prompt_tokens_);
  counter("specd_completion_tokens_total", "Tokens generated.", completion_tokens_);
  counter("specd_drafted_tokens_total", "Draft tokens proposed.", drafted_);
  counter("specd_accepted_tokens_total", "Draft tokens accepted.", accepted_);
  counter("specd_target_passes_total", "Target passes after the prompt (rounds).", rounds_);
  counter("specd_cancelled_total",
          "Generations cancelled (a client that hung up, or the drain deadline).", cancelled_);
  counter("specd_steps_total", "Scheduler steps (one target pass over every running sequence).",
          steps.steps);
  counter("specd_step_rows_total", "Rows the steps' target passes ran.", steps.rows);
  counter("specd_step_prefill_rows_total", "Of those, prompt rows (prefill chunks).",
          steps.prefill_rows);
  counter("specd_step_drafting_sequences_total", "Sequences that drafted, summed over steps.",
          steps.drafted_sequences);
  auto seconds = [&](const char* name, const char* help, double v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n"
      << name << " " << v << "\n";
  };
  seconds("specd_step_seconds_total", "Wall time of the steps.", steps.seconds);
  seconds("specd_step_draft_seconds_total", "Of which drafting (proposers).", steps.draft_seconds);
  seconds("specd_step_pass_seconds_total", "Of which the target passes.", steps.pass_seconds);
  seconds("specd_step_rounds_seconds_total",
          "Of which the work after a pass: distributions, acceptance, commits, emission.",
          steps.rounds_seconds);
  counter("specd_prefix_prompt_rows_total",
          "Prompt rows of admitted sequences (each prompt less its last token).",
          steps.prompt_rows);
  counter("specd_prefix_hit_rows_total", "Of those, rows taken from the prefix cache.",
          steps.prefix_hit_rows);
  counter("specd_kv_evictions_total", "Cached KV blocks evicted to make room.", steps.kv_evictions);
  auto gauge = [&](const char* name, const char* help, uint64_t v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n"
      << name << " " << v << "\n";
  };
  gauge("specd_kv_blocks", "Blocks of the target's KV pool.", steps.kv_blocks);
  gauge("specd_kv_blocks_free",
        "Of those, blocks no sequence holds (free, or cached prefixes kept until evicted).",
        steps.kv_blocks_free);
  gauge("specd_kv_blocks_cached", "Of the free blocks, cached prefixes (evictable).",
        steps.kv_blocks_cached);
  gauge("specd_kv_window_blocks",
        "Blocks of the sliding-window layers' pool (0: the model has none).",
        steps.kv_window_blocks);
  gauge("specd_kv_window_blocks_used",
        "Of those, blocks in use: the last window of each sequence, and cached prefixes'.",
        steps.kv_window_blocks_used);
  o << "# HELP specd_queue_depth Requests waiting for the scheduler.\n"
    << "# TYPE specd_queue_depth gauge\nspecd_queue_depth " << queued << "\n"
    << "# HELP specd_running Sequences being decoded.\n"
    << "# TYPE specd_running gauge\nspecd_running " << running << "\n";
  for (size_t i = 0; i < histograms_.size(); ++i) {
    const Histogram& h = histograms_[i];
    const char* name = kSeries[i].name;
    o << "# HELP " << name << " " << kSeries[i].help << "\n# TYPE " << name << " histogram\n";
    uint64_t cumulative = 0;
    for (size_t b = 0; b < h.bounds->size(); ++b) {
      cumulative += h.counts[b];
      o << name << "_bucket{le=\"" << (*h.bounds)[b] << "\"} " << cumulative << "\n";
    }
    o << name << "_bucket{le=\"+Inf\"} " << h.total << "\n"
      << name << "_sum " << h.sum << "\n"
      << name << "_count " << h.total << "\n";
  }
  render_gateway(o, queued, running, steps, model_name);
  return o.str();
}

// vLLM's series as prometheus_client writes them (a counter's samples and its HELP/TYPE lines
// end in _total), each labelled with the served model's name.
void Metrics::render_gateway(std::ostream& o, size_t queued, size_t running,
                             const StepTotals& steps, const std::string& model_name) const {
  std::string label = "model_name=\"";
  for (char c : model_name) {  // the exposition format's escapes
    if (c == '\\' || c == '"') label += '\\';
    label += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  label += "\"";
  auto head = [&](const std::string& name, const char* type, const char* help) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  auto gauge = [&](const char* name, const char* help, double v) {
    head(name, "gauge", help);
    o << name << "{" << label << "} " << v << "\n";
  };
  auto counter = [&](const std::string& name, const char* help, uint64_t v) {
    head(name, "counter", help);
    o << name << "{" << label << "} " << v << "\n";
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
        double(running));
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", double(queued));
  const uint64_t used = steps.kv_blocks - std::min(steps.kv_blocks_free, steps.kv_blocks);
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
        steps.kv_blocks ? double(used) / double(steps.kv_blocks) : 0.0);
  head("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig.");
  if (steps.kv_block_rows > 0)  // known from the first step on
    o << "vllm:cache_config_info{" << label << ",block_size=\"" << steps.kv_block_rows
      << "\",num_gpu_blocks=\"" << steps.kv_blocks << "\",num_cpu_blocks=\"0\"} 1\n";
  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", prompt_tokens_);
  counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
          completion_tokens_);
  counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", drafts_);
  counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", drafted_);
  counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", accepted_);
  head("vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
       "Accepted tokens per draft position.");
  for (size_t d = 0; d < accepted_at_.size(); ++d)
    o << "vllm:spec_decode_num_accepted_tokens_per_pos_total{" << label << ",position=\"" << d
      << "\"} " << accepted_at_[d] << "\n";
}

}  // namespace specd::server
