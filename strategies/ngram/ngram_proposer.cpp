// Prompt lookup (n-gram) drafting: find the most recent earlier occurrence of the last n
// tokens of the sequence and propose the tokens that followed it. No model, deterministic:
// a chain drawn with SPECD_SIBLINGS_DETERMINISTIC and no q, so exact-match (exact at any
// temperature) is its default rule.
//
// Parameters ([proposer]): max_n (longest suffix tried, default 4), min_n (shortest,
// default 1), plus k (tokens per draft) from the host.
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <string>

namespace {

class NgramProposer {
 public:
  NgramProposer(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
                const specd_proposer_context& context, const specd_transform&)
      : k_(context.draft_length) {
    params.require_known({"max_n", "min_n"});
    max_n_ = params.get_int("max_n", 4);
    min_n_ = params.get_int("min_n", 1);
    if (min_n_ < 1 || min_n_ > 64)
      throw params.invalid("min_n", "must be in [1, 64], not " + std::to_string(min_n_));
    if (max_n_ < min_n_ || max_n_ > 64)
      throw params.invalid("max_n", "must be in [min_n, 64] = [" + std::to_string(min_n_) +
                                        ", 64], not " + std::to_string(max_n_));
    if (model_path && *model_path)
      host.log(SPECD_LOG_WARN, "org.specd.propose.ngram",
               std::string("ngram uses no model; ignoring '") + model_path + "'");
  }

  void begin(std::span<const specd_token>, const float*) {}

  void propose(std::span<const specd_token> seq, specd_rng*, specd_draft_output& out) {
    out.n_nodes = 0;
    out.scheme = SPECD_SIBLINGS_DETERMINISTIC;
    out.has_q = 0;
    const int64_t len = static_cast<int64_t>(seq.size());
    const int64_t want = std::min<int64_t>(k_, out.capacity);
    for (int64_t n = std::min<int64_t>(max_n_, len - 1); n >= min_n_ && want > 0; --n) {
      const specd_token* suffix = seq.data() + len - n;
      // Most recent match first: its continuation is the likeliest to repeat.
      for (int64_t start = len - n - 1; start >= 0; --start) {
        if (!std::equal(suffix, suffix + n, seq.data() + start)) continue;
        int64_t from = start + n;
        int64_t count = std::min<int64_t>(want, len - from);
        for (int64_t i = 0; i < count; ++i) {
          out.tokens[i] = seq[static_cast<size_t>(from + i)];
          out.parents[i] = static_cast<int32_t>(i);  // a chain: node i+1's parent is node i
        }
        out.n_nodes = static_cast<uint32_t>(count);
        return;
      }
    }
  }

  void commit(std::span<const specd_token>, specd_token, const float*) {}

 private:
  int64_t k_;
  int64_t max_n_ = 4;
  int64_t min_n_ = 1;
};

}  // namespace

SPECD_PROPOSER_PLUGIN(NgramProposer, "org.specd.propose.ngram", "ngram", "1.0.0",
                      "prompt lookup: continues the latest earlier match of the last n tokens", 0,
                      "exact-match")
