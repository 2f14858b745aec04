// Independent draft model: a second, smaller model GGUF of any supported architecture (same
// vocabulary as the target, its architecture may differ) drafts a chain of k tokens, run by
// the host's model service on any backend ([proposer] backend may differ from the target's).
// Batched (ABI 0.5): one model serves every sequence, each with its own KV cache, and each
// draft step is ONE pass over all the drafting sequences (forward_batch).
//
// Parameters ([proposer]): mode = "sample" (default: each token drawn from q, the draft's
// distribution after the run's sampling transform) or "greedy" (each token the argmax of q,
// reported with a one-hot q: a token "drawn" from a point mass, so `rejection` stays exact
// and accepts it with probability p(token)). Either way q is returned and the exact
// `rejection` rule is the default.
//
// A sequence's draft cache mirrors it: drafted rows are committed as they are drawn, and the
// next round first truncates the cache to the longest prefix it shares with the accepted
// sequence, then catches up on the new tokens. Catch-up runs in pieces of at most the draft
// device's invariant_max_rows rows, so every row of a sequence's cache, and so its drafts,
// have the same bits whatever other sequences share the passes.
//
// A sequence with an output constraint (a request's grammar or JSON Schema, ABI 0.6) has its
// draft rows masked by it before the transform, so the draft stays inside the grammar.
#include <specd/model.h>
#include <specd/cpp/distribution.hpp>
#include <specd/cpp/plugin.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace {

class DraftModelProposer {
 public:
  struct Sequence {
    const specd_model_api* api = nullptr;
    void* host_context = nullptr;
    specd_model_cache* cache = nullptr;
    std::vector<specd_token> cached;  // the tokens the cache holds, in order
    bool said_context_full = false;   // the warning that drafting stopped, once per request
    ~Sequence() {
      if (cache) api->cache_free(host_context, cache);
    }
  };

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
      piece_ = std::max<uint32_t>(info.invariant_max_rows, 1);
    } catch (...) {
      api_->close(host_->context, model_);
      throw;
    }
  }

  ~DraftModelProposer() { api_->close(host_->context, model_); }

  std::unique_ptr<Sequence> open() {
    auto s = std::make_unique<Sequence>();
    s->api = api_;
    s->host_context = host_->context;
    check(api_->cache_create(host_->context, model_, capacity_, &s->cache));
    return s;
  }

  void begin(Sequence& s, std::span<const specd_token>, const float*) {
    check(api_->truncate(host_->context, model_, s.cache, 0));
    s.cached.clear();
    s.said_context_full = false;
  }

  void commit(Sequence&, std::span<const specd_token>, specd_token, const float*) {}

  void propose(std::span<specd::sdk::ProposeItem<Sequence>> items) {
    // What each item drafts: its sequence's catch-up, then `want` tokens.
    std::vector<Work> work;
    for (auto& item : items) {
      item.out.n_nodes = 0;
      item.out.scheme = SPECD_SIBLINGS_IID;
      item.out.has_q = 1;
      const uint32_t want = draft_length(item);
      if (want == 0) continue;
      Sequence& s = item.sequence;
      // Longest common prefix of the cache and the sequence; the root is always re-run so
      // that its logits are at hand.
      size_t common = 0;
      while (common < s.cached.size() && common < item.tokens.size() &&
             s.cached[common] == item.tokens[common])
        ++common;
      common = std::min(common, item.tokens.size() - 1);
      check(api_->truncate(host_->context, model_, s.cache, static_cast<uint32_t>(common)));
      s.cached.resize(common);
      Work& w = work.emplace_back();
      w.item = &item;
      w.want = want;
      w.catch_up = item.tokens.subspan(common);
    }
    if (work.empty()) return;
    for (Work& w : work) w.logits.resize(draft_vocab_);

    // Catch-up, a piece of each sequence's new tokens per pass; the last piece's last row
    // gives the logits of the first draft token.
    for (;;) {
      std::vector<Work*> pass;
      for (Work& w : work)
        if (!w.catch_up.empty()) pass.push_back(&w);
      if (pass.empty()) break;
      for (Work* w : pass) {
        const size_t m = std::min<size_t>(w->catch_up.size(), piece_);
        w->rows = w->catch_up.subspan(0, m);
        w->catch_up = w->catch_up.subspan(m);
        w->wants_logits = w->catch_up.empty();
      }
      run(pass);
    }
    // Draft steps: each sequence that still drafts adds its last token, one row each.
    for (uint32_t i = 0;; ++i) {
      std::vector<Work*> pass;
      for (Work& w : work) {
        if (i >= w.want) continue;
        if (!draw(*w.item, i, w.logits, w.token)) {
          w.want = i;  // the output's constraint allows nothing below this draft
          continue;
        }
        if (i + 1 < w.want) {
          w.rows = std::span<const specd_token>(&w.token, 1);
          w.wants_logits = true;
          pass.push_back(&w);
        }
      }
      if (pass.empty()) break;
      run(pass);
    }
  }

 private:
  struct Work {
    specd::sdk::ProposeItem<Sequence>* item = nullptr;
    uint32_t want = 0;
    std::span<const specd_token> catch_up;  // tokens still to run before drafting
    std::span<const specd_token> rows;      // this pass's rows
    bool wants_logits = false;
    specd_token token = 0;      // the last drafted token
    std::vector<float> logits;  // [draft vocab] of the last row run
  };

  void check(specd_status* status) const { specd::sdk::Host(host_).check(status); }

  // The item's draft length: k within its room and the draft model's context (drafting stops
  // when that is full, and the run goes on as plain decoding; said once per request).
  uint32_t draft_length(specd::sdk::ProposeItem<Sequence>& item) {
    uint32_t want = std::min<uint32_t>(k_, item.out.capacity);
    const size_t n = item.tokens.size();
    if (n + want > capacity_) want = n < capacity_ ? static_cast<uint32_t>(capacity_ - n) : 0;
    if (want == 0 && item.out.capacity > 0 && k_ > 0 && !item.sequence.said_context_full) {
      item.sequence.said_context_full = true;
      specd::sdk::Host(host_).log(
          SPECD_LOG_WARN, "org.specd.propose.draft-model",
          "draft model " + model_path_ + " holds " + std::to_string(capacity_) +
              " tokens of context and the sequence has reached " + std::to_string(n) +
              ": drafting stops here, the rest of the run is plain decoding");
    }
    return want;
  }

  // One pass over the rows of `pass` (each after its sequence's cache), then commits them.
  void run(const std::vector<Work*>& pass) {
    const size_t n = pass.size();
    std::vector<std::vector<int32_t>> positions(n), parents(n);
    std::vector<specd_model_batch_entry> entries(n);
    std::vector<const specd_model_batch_entry*> pointers(n);
    for (size_t e = 0; e < n; ++e) {
      Work& w = *pass[e];
      const uint32_t m = static_cast<uint32_t>(w.rows.size());
      const size_t at = w.item->sequence.cached.size();
      for (uint32_t i = 0; i < m; ++i) {
        positions[e].push_back(static_cast<int32_t>(at + i));
        parents[e].push_back(static_cast<int32_t>(i) - 1);
      }
      entries[e] = {sizeof(specd_model_batch_entry),
                    m,
                    w.item->sequence.cache,
                    w.rows.data(),
                    positions[e].data(),
                    parents[e].data(),
                    nullptr,
                    w.wants_logits ? m - 1 : m,
                    0,
                    w.wants_logits ? w.logits.data() : nullptr,
                    nullptr};
      pointers[e] = &entries[e];
    }
    check(api_->forward_batch(host_->context, model_, pointers.data(), static_cast<uint32_t>(n)));
    for (size_t e = 0; e < n; ++e) {
      Work& w = *pass[e];
      std::vector<int32_t> rows(w.rows.size());
      for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i);
      check(api_->commit(host_->context, model_, w.item->sequence.cache, rows.data(),
                         static_cast<uint32_t>(rows.size())));
      auto& cached = w.item->sequence.cached;
      cached.insert(cached.end(), w.rows.begin(), w.rows.end());
    }
  }

  // Draft token i of an item from the logits of its last row: q over the target's
  // vocabulary (draft ids beyond it, padding, are impossible), masked by the output's
  // constraint when the item has one (so q is what the token is drawn from), then a draw or
  // the argmax. False: the constraint allows nothing here, and token i is not drafted.
  bool draw(specd::sdk::ProposeItem<Sequence>& item, uint32_t i, std::vector<float>& logits,
            specd_token& drafted) {
    const uint32_t n = std::min(draft_vocab_, vocab_);
    if (item.filter &&
        !item.filter->apply(item.filter->context, item.out.tokens, i, logits.data(), n))
      return false;
    std::vector<double> scratch;
    double* q_row = item.out.q ? item.out.q + static_cast<size_t>(i) * vocab_
                               : (scratch.resize(vocab_), scratch.data());
    check(transform_.apply(transform_.context, logits.data(), n, q_row));
    std::fill(q_row + n, q_row + vocab_, 0.0);
    const specd_token token =
        greedy_
            ? specd::sdk::argmax_index(q_row, vocab_)
            : specd::sdk::sample_index(q_row, vocab_, host_->rng_uniform(host_->context, item.rng));
    if (greedy_) {  // the point mass the token was taken from
      std::fill(q_row, q_row + vocab_, 0.0);
      q_row[token] = 1.0;
    }
    item.out.tokens[i] = token;
    item.out.parents[i] = static_cast<int32_t>(i);
    item.out.n_nodes = i + 1;
    drafted = token;
    return true;
  }

  const specd_host* host_;
  const specd_model_api* api_;
  specd_transform transform_;
  uint32_t k_, vocab_;
  bool greedy_ = false;
  std::string model_path_;
  specd_model* model_ = nullptr;
  uint32_t draft_vocab_ = 0, capacity_ = 0, piece_ = 1;
};

}  // namespace

SPECD_BATCH_PROPOSER_PLUGIN(DraftModelProposer, "org.specd.propose.draft-model", "draft-model",
                            "1.1.0",
                            "independent draft model (a smaller GGUF model) drafting a chain of "
                            "k tokens, one batched pass per draft step",
                            SPECD_PROPOSER_PROVIDES_Q, "rejection")
