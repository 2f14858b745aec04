// Independent draft model: a second, smaller model GGUF of any supported architecture (same
// vocabulary as the target, its architecture may differ) drafts a chain of k tokens, run by
// the host's model service on any backend ([proposer] backend may differ from the target's).
//
// Parameters ([proposer]): mode = "sample" (default: each token drawn from q, the draft's
// distribution after the run's sampling transform) or "greedy" (each token the argmax of q,
// reported with a one-hot q: a token "drawn" from a point mass, so `rejection` stays exact
// and accepts it with probability p(token)). Either way q is returned and the exact
// `rejection` rule is the default.
//
// The draft's KV cache mirrors the sequence: drafted rows are committed as they are drawn,
// and the next round first truncates the cache to the longest prefix it shares with the
// accepted sequence, then catches up on the new tokens.
#include <specd/model.h>
#include <specd/cpp/distribution.hpp>
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace {

class DraftModelProposer {
 public:
  DraftModelProposer(specd::sdk::Host host, const specd::sdk::Params& params,
                     const char* model_path, const specd_proposer_context& context,
                     const specd_transform& transform)
      : host_(host.raw()),
        api_(host.raw()->models),
        transform_(transform),
        k_(context.draft_length),
        vocab_(context.vocab_size) {
    params.require_known({"mode"});
    greedy_ = params.get_choice("mode", {"sample", "greedy"}) == "greedy";
    if (!model_path || !*model_path)
      throw specd::sdk::invalid_argument(
          "draft-model needs [proposer] model = \"path/to/draft.gguf\"");
    model_path_ = model_path;
    check(api_->open(host_->context, model_path, nullptr, 0, &model_));
    try {
      check(api_->check_vocabulary(host_->context, model_, context.target_path));
      specd_model_info info{};
      info.struct_size = sizeof(info);
      check(api_->info(host_->context, model_, &info));
      draft_vocab_ = info.vocab_size;
      capacity_ = info.context_length;
      check(api_->cache_create(host_->context, model_, capacity_, &cache_));
    } catch (...) {
      release();
      throw;
    }
    logits_.resize(draft_vocab_);
    q_.resize(vocab_);
  }

  ~DraftModelProposer() { release(); }

  void begin(std::span<const specd_token>, const float*) {
    check(api_->truncate(host_->context, model_, cache_, 0));
    cached_.clear();
    said_context_full_ = false;
  }

  void propose(std::span<const specd_token> seq, specd_rng* rng, specd_draft_output& out) {
    out.n_nodes = 0;
    out.scheme = SPECD_SIBLINGS_IID;
    out.has_q = 1;
    uint32_t want = std::min<uint32_t>(k_, out.capacity);
    if (seq.size() + want > capacity_) want = seq.size() < capacity_ ? capacity_ - seq.size() : 0;
    if (want == 0) {
      // The draft's context is full: the run goes on as plain decoding. Say so once.
      if (out.capacity > 0 && k_ > 0 && !said_context_full_) {
        said_context_full_ = true;
        specd::sdk::Host(host_).log(
            SPECD_LOG_WARN, "org.specd.propose.draft-model",
            "draft model " + model_path_ + " holds " + std::to_string(capacity_) +
                " tokens of context and the sequence has reached " + std::to_string(seq.size()) +
                ": drafting stops here, the rest of the run is plain decoding");
      }
      return;
    }

    // Longest common prefix of the cache and the sequence; the root is always re-run so
    // that its logits are at hand.
    size_t common = 0;
    while (common < cached_.size() && common < seq.size() && cached_[common] == seq[common])
      ++common;
    common = std::min(common, seq.size() - 1);
    check(api_->truncate(host_->context, model_, cache_, static_cast<uint32_t>(common)));
    cached_.resize(common);
    run_chain(seq.subspan(common));

    for (uint32_t i = 0; i < want; ++i) {
      double* q_row = out.q ? out.q + static_cast<size_t>(i) * vocab_ : q_.data();
      apply_transform(q_row);
      specd_token token = greedy_ ? argmax(q_row) : sample(q_row, rng);
      if (greedy_) {  // the point mass the token was taken from
        std::fill(q_row, q_row + vocab_, 0.0);
        q_row[token] = 1.0;
      }
      out.tokens[i] = token;
      out.parents[i] = static_cast<int32_t>(i);
      out.n_nodes = i + 1;
      if (i + 1 < want) run_chain(std::span<const specd_token>(&out.tokens[i], 1));
    }
  }

  void commit(std::span<const specd_token>, specd_token, const float*) {}

 private:
  void check(specd_status* status) const { specd::sdk::Host(host_).check(status); }

  void release() {
    if (cache_) api_->cache_free(host_->context, cache_);
    if (model_) api_->close(host_->context, model_);
    cache_ = nullptr;
    model_ = nullptr;
  }

  // Runs `tokens` as a chain after the cache, commits them, keeps the last row's logits.
  void run_chain(std::span<const specd_token> tokens) {
    uint32_t m = static_cast<uint32_t>(tokens.size());
    if (m == 0) return;
    positions_.resize(m);
    parents_.resize(m);
    rows_.resize(m);
    for (uint32_t i = 0; i < m; ++i) {
      positions_[i] = static_cast<int32_t>(cached_.size() + i);
      parents_[i] = static_cast<int32_t>(i) - 1;
      rows_[i] = static_cast<int32_t>(i);
    }
    if (api_->struct_size > offsetof(specd_model_api, forward_rows) && api_->forward_rows) {
      // The last row's logits alone (ABI 0.2): a long prompt costs no [m, vocab] buffer.
      check(api_->forward_rows(host_->context, model_, cache_, tokens.data(), positions_.data(),
                               parents_.data(), m, m - 1, logits_.data(), nullptr));
    } else {
      chain_logits_.resize(static_cast<size_t>(m) * draft_vocab_);
      check(api_->forward(host_->context, model_, cache_, tokens.data(), positions_.data(),
                          parents_.data(), m, chain_logits_.data(), nullptr));
      std::copy_n(chain_logits_.data() + static_cast<size_t>(m - 1) * draft_vocab_, draft_vocab_,
                  logits_.data());
    }
    check(api_->commit(host_->context, model_, cache_, rows_.data(), m));
    cached_.insert(cached_.end(), tokens.begin(), tokens.end());
  }

  // q over the target's vocabulary: draft ids beyond it (padding) are impossible.
  void apply_transform(double* q_row) {
    uint32_t n = std::min(draft_vocab_, vocab_);
    check(transform_.apply(transform_.context, logits_.data(), n, q_row));
    std::fill(q_row + n, q_row + vocab_, 0.0);
  }

  specd_token sample(const double* q, specd_rng* rng) const {
    return specd::sdk::sample_index(q, vocab_, host_->rng_uniform(host_->context, rng));
  }

  specd_token argmax(const double* q) const { return specd::sdk::argmax_index(q, vocab_); }

  const specd_host* host_;
  const specd_model_api* api_;
  specd_transform transform_;
  uint32_t k_, vocab_;
  bool greedy_ = false;
  bool said_context_full_ = false;  // the warning that drafting stopped, once per request
  std::string model_path_;
  specd_model* model_ = nullptr;
  specd_model_cache* cache_ = nullptr;
  uint32_t draft_vocab_ = 0, capacity_ = 0;
  std::vector<specd_token> cached_;
  std::vector<float> logits_, chain_logits_;
  std::vector<double> q_;
  std::vector<int32_t> positions_, parents_, rows_;
};

}  // namespace

SPECD_PROPOSER_PLUGIN(DraftModelProposer, "org.specd.propose.draft-model", "draft-model", "1.0.0",
                      "independent draft model (a smaller GGUF model) drafting a chain of k tokens",
                      SPECD_PROPOSER_PROVIDES_Q, "rejection")
