// MTP (DeepSeek-V3 style multi-token prediction, train/FORMATS.md section 6): a module on
// the target's last hidden state (BEFORE its final norm) and the embedding of the next
// token predicts the token after; drafting chains by feeding the module's own output
// feature back as the next element's hidden state, at the next RoPE position.
//
// Parameters ([proposer]): model = the specd-mtp GGUF (bound to the run's target);
// mode = "sample" (default: each token drawn from q, the module's distribution after the
// run's sampling transform) or "greedy" (the argmax of q, reported with a one-hot q). q is
// returned either way; the exact `rejection` rule is the default.
//
// The module's KV cache holds the elements built from true target features (committed);
// drafted elements stay pending and are dropped at the next round.
#include <specd/model.h>
#include <specd/cpp/distribution.hpp>
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace {


class MtpProposer {
 public:
  MtpProposer(specd::sdk::Host host, const specd::sdk::Params& params, const char* model_path,
              const specd_proposer_context& context, const specd_transform& transform)
      : host_(host.raw()),
        api_(host.raw()->models),
        transform_(transform),
        k_(context.draft_length),
        vocab_(context.vocab_size),
        dim_(context.hidden_dim) {
    params.require_known({"mode"});
    const std::string mode = params.get_string("mode", "sample");
    if (mode != "sample" && mode != "greedy")
      throw specd::sdk::invalid_argument("mtp: mode must be \"sample\" or \"greedy\", not \"" +
                                         mode + "\"");
    greedy_ = mode == "greedy";
    if (!model_path || !*model_path)
      throw specd::sdk::invalid_argument("mtp needs [proposer] model = \"path/to/mtp.gguf\"");
    if (dim_ == 0)
      throw specd::sdk::invalid_argument("mtp needs target features; the verifier offers none");
    check(api_->head_open(host_->context, model_path, context.target_path, nullptr, 0, &head_));
    try {
      specd_model_info info{};
      info.struct_size = sizeof(info);
      check(api_->info(host_->context, head_, &info));
      if (std::string(info.architecture) != "specd-mtp")
        throw specd::sdk::invalid_argument(std::string("mtp: ") + model_path + " is a " +
                                           info.architecture + " file, not specd-mtp");
      if (info.hidden_dim != dim_)
        throw specd::sdk::invalid_argument("mtp: the module's width differs from the target's");
      head_vocab_ = info.vocab_size;
      capacity_ = std::max<uint32_t>(4096, 2 * info.context_length);
      check(api_->cache_create(host_->context, head_, capacity_, &cache_));
    } catch (...) {
      release();
      throw;
    }
    logits_.resize(head_vocab_);
    feature_.resize(dim_);
    q_.resize(vocab_);
  }

  ~MtpProposer() { release(); }

  void begin(std::span<const specd_token> prompt, const float* hidden) {
    check(api_->truncate(host_->context, head_, cache_, 0));
    features_.clear();
    if (hidden && prompt.size() > 1) features_.assign(hidden, hidden + (prompt.size() - 1) * dim_);
  }

  void propose(std::span<const specd_token> seq, specd_rng* rng, specd_draft_output& out) {
    out.n_nodes = 0;
    out.scheme = SPECD_SIBLINGS_IID;
    out.has_q = 1;
    const uint32_t n_feat = static_cast<uint32_t>(features_.size() / dim_);
    if (n_feat == 0 || n_feat + 1 != seq.size()) return;
    if (!catch_up(seq, n_feat)) return;
    uint32_t want = std::min<uint32_t>(k_, out.capacity);
    want = std::min<uint32_t>(want, capacity_ - n_feat);
    for (uint32_t i = 0; i < want; ++i) {
      double* q_row = out.q ? out.q + static_cast<size_t>(i) * vocab_ : q_.data();
      const uint32_t n = std::min(head_vocab_, vocab_);
      check(transform_.apply(transform_.context, logits_.data(), n, q_row));
      std::fill(q_row + n, q_row + vocab_, 0.0);
      const specd_token token = greedy_ ? argmax(q_row) : sample(q_row, rng);
      if (greedy_) {
        std::fill(q_row, q_row + vocab_, 0.0);
        q_row[token] = 1.0;
      }
      out.tokens[i] = token;
      out.parents[i] = static_cast<int32_t>(i);
      out.n_nodes = i + 1;
      if (i + 1 == want) break;
      // The next element: the module's own output feature and the drafted token.
      const int32_t position = static_cast<int32_t>(n_feat + i);
      const int32_t parent = static_cast<int32_t>(i) - 1;
      std::vector<float> in = feature_;
      check(api_->head_forward(host_->context, head_, cache_, in.data(), &token, &position, &parent,
                               1, logits_.data(), feature_.data()));
    }
  }

  void commit(std::span<const specd_token> accepted, specd_token, const float* hidden) {
    if (hidden) features_.insert(features_.end(), hidden, hidden + (accepted.size() + 1) * dim_);
  }

 private:
  // Runs the elements from true features not yet in the cache (the last is re-run when all
  // are cached) and commits them; leaves the last one's logits and output feature.
  bool catch_up(std::span<const specd_token> seq, uint32_t n_feat) {
    uint32_t done = api_->cache_size(host_->context, cache_);
    done = std::min(done, n_feat - 1);
    if (n_feat > capacity_) return false;
    check(api_->truncate(host_->context, head_, cache_, done));
    const uint32_t m = n_feat - done;
    std::vector<specd_token> tokens(m);
    std::vector<int32_t> positions(m), parents(m), rows(m);
    for (uint32_t i = 0; i < m; ++i) {
      tokens[i] = seq[done + i + 1];
      positions[i] = static_cast<int32_t>(done + i);
      parents[i] = static_cast<int32_t>(i) - 1;
      rows[i] = static_cast<int32_t>(i);
    }
    std::vector<float> logits(static_cast<size_t>(m) * head_vocab_);
    std::vector<float> hidden(static_cast<size_t>(m) * dim_);
    check(api_->head_forward(host_->context, head_, cache_, features_.data() + done * dim_,
                             tokens.data(), positions.data(), parents.data(), m, logits.data(),
                             hidden.data()));
    check(api_->commit(host_->context, head_, cache_, rows.data(), m));
    std::copy_n(logits.data() + static_cast<size_t>(m - 1) * head_vocab_, head_vocab_,
                logits_.data());
    std::copy_n(hidden.data() + static_cast<size_t>(m - 1) * dim_, dim_, feature_.data());
    return true;
  }

  void check(specd_status* status) const { specd::sdk::Host(host_).check(status); }

  void release() {
    if (cache_) api_->cache_free(host_->context, cache_);
    if (head_) api_->close(host_->context, head_);
    cache_ = nullptr;
    head_ = nullptr;
  }

  specd_token sample(const double* q, specd_rng* rng) const {
    return specd::sdk::sample_index(q, vocab_, host_->rng_uniform(host_->context, rng));
  }

  specd_token argmax(const double* q) const { return specd::sdk::argmax_index(q, vocab_); }

  const specd_host* host_;
  const specd_model_api* api_;
  specd_transform transform_;
  uint32_t k_, vocab_, dim_;
  bool greedy_ = false;
  specd_model* head_ = nullptr;
  specd_model_cache* cache_ = nullptr;
  uint32_t head_vocab_ = 0, capacity_ = 0;
  std::vector<float> features_;  // [n_feat, dim] true target features of the sequence
  std::vector<float> logits_;    // [head_vocab] of the last element run
  std::vector<float> feature_;   // [dim] output feature of the last element run
  std::vector<double> q_;
};

}  // namespace

SPECD_PROPOSER_PLUGIN(MtpProposer, "org.specd.propose.mtp", "mtp", "1.0.0",
                      "MTP module (DeepSeek-V3 style) on target features drafting a chain of k",
                      SPECD_PROPOSER_NEEDS_TARGET_HIDDEN | SPECD_PROPOSER_PROVIDES_Q, "rejection")
