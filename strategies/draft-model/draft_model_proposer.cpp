// Independent draft model: a second, smaller model GGUF of any supported architecture (the
// target's vocabulary, or another with `vocabulary` below) drafts a chain of k tokens, run by
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
//
// vocabulary = "shared" (default: the draft's vocabulary must be the target's, else the run
// is refused naming the first difference), "text" or "intersection": a draft whose tokenizer
// differs (specd/cpp/vocabulary_bridge.hpp says how each stays exact). The draft's context is
// the target's committed text re-tokenized by the draft's tokenizer (only its end, each
// round); its q is its softmax at the run's temperature (top-k/top-p are the target's, in
// another vocabulary). "text" drafts the draft's argmax at each step and proposes the target's
// tokenization of the drafted bytes with a one-hot q (so it is accepted with probability p);
// "intersection" draws (mode) only tokens that spell one target token, q carried across.
// A constraint masks an "intersection" draw (mapped onto the draft's ids); a "text" chain
// stops at the first translated token it refuses.
#include <specd/model.h>
#include <specd/cpp/distribution.hpp>
#include <specd/cpp/plugin.hpp>
#include <specd/cpp/vocabulary_bridge.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/draft_row.hpp"

namespace {

class DraftModelProposer {
 public:
  struct Sequence {
    const specd_model_api* api = nullptr;
    void* host_context = nullptr;
    specd_model_cache* cache = nullptr;
    std::vector<specd_token> cached;  // the tokens the cache holds, in order
    bool said_context_full = false;   // the warning that drafting stopped, once per request
    // Across vocabularies: the target tokens whose text is in `text`, where each ends, and
    // the draft's tokens for that text.
    std::vector<specd_token> seen;
    std::vector<size_t> seen_ends;
    std::string text;
    std::optional<specd::sdk::DraftTokens> draft;
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
    params.require_known({"mode", "vocabulary"});
    greedy_ = params.get_choice("mode", {"sample", "greedy"}) == "greedy";
    const std::string vocabulary =
        params.get_choice("vocabulary", {"shared", "text", "intersection"});
    across_ = vocabulary != "shared";
    intersection_ = vocabulary == "intersection";
    if (!model_path || !*model_path)
      throw specd::sdk::invalid_argument(
          "draft-model needs [proposer] model = \"path/to/draft.gguf\"");
    model_path_ = model_path;
    check(api_->open(host_->context, model_path, nullptr, 0, &model_));
    try {
      if (across_)
        open_translation(context);
      else
        check_same_vocabulary(context.target_path);
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
    if (across_)
      s->draft.emplace(
          [this](std::string_view text, bool start) {
            return draft_text_->encode(text, start ? SPECD_ENCODE_BOS : SPECD_ENCODE_CONTINUATION);
          },
          draft_pieces_);
    check(api_->cache_create(host_->context, model_, capacity_, &s->cache));
    return s;
  }

  void begin(Sequence& s, std::span<const specd_token>, const float*) {
    check(api_->truncate(host_->context, model_, s.cache, 0));
    s.cached.clear();
    s.said_context_full = false;
    s.seen.clear();
    s.seen_ends.clear();
    s.text.clear();
    if (s.draft) s.draft->reset();
  }

  void commit(Sequence&, std::span<const specd_token>, specd_token, const float*) {}

  void propose(std::span<specd::sdk::ProposeItem<Sequence>> items) {
    // What each item drafts: its sequence's catch-up, then `want` tokens.
    std::vector<Work> work;
    for (auto& item : items) {
      item.start_draft(SPECD_SIBLINGS_IID, true);
      Sequence& s = item.sequence;
      // What the draft model reads: the sequence itself, or its text in the draft's tokens.
      const std::span<const specd_token> context =
          across_ ? std::span<const specd_token>(draft_context(s, item.tokens)) : item.tokens;
      const uint32_t want = context.empty() ? 0 : draft_length(item, context.size());
      if (want == 0) continue;
      // Longest common prefix of the cache and the context; the root is always re-run so
      // that its logits are at hand.
      size_t common = 0;
      while (common < s.cached.size() && common < context.size() &&
             s.cached[common] == context[common])
        ++common;
      common = std::min(common, context.size() - 1);
      try {
        check(api_->truncate(host_->context, model_, s.cache, static_cast<uint32_t>(common)));
      } catch (const specd::sdk::PluginError& e) {
        // A sliding-window draft gave back the rows a cut that far back needs: start over.
        if (e.code() != SPECD_STATUS_UNSUPPORTED) throw;
        check(api_->truncate(host_->context, model_, s.cache, 0));
        common = 0;
      }
      s.cached.resize(common);
      Work& w = work.emplace_back();
      w.item = &item;
      w.want = want;
      w.catch_up = context.subspan(common);
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
        if (!(across_ ? draw_across(w, i) : draw(*w.item, i, w.logits, w.token))) {
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
    if (across_)
      for (Work& w : work) finish_across(w);
  }

 private:
  struct Work {
    specd::sdk::ProposeItem<Sequence>* item = nullptr;
    uint32_t want = 0;
    std::span<const specd_token> catch_up;  // tokens still to run before drafting
    std::span<const specd_token> rows;      // this pass's rows
    bool wants_logits = false;
    specd_token token = 0;             // the last drafted token
    std::vector<float> logits;         // [draft vocab] of the last row run
    std::vector<specd_token> drafted;  // across vocabularies: the draft's own tokens
  };

  void check(specd_status* status) const { specd::sdk::Host(host_).check(status); }

  // The item's draft length: k within its room and the draft model's context (drafting stops
  // when that is full, and the run goes on as plain decoding; said once per request).
  uint32_t draft_length(specd::sdk::ProposeItem<Sequence>& item, size_t n) {
    uint32_t want = std::min<uint32_t>(k_, item.out.capacity);
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
    drafted = specd::strategies::draft_chain_token(item, i, logits.data(), n, vocab_, greedy_,
                                                   transform_, *host_);
    return true;
  }

  void check_same_vocabulary(const char* target_path) {
    try {
      check(api_->check_vocabulary(host_->context, model_, target_path));
    } catch (const specd::sdk::PluginError& e) {
      if (e.code() != SPECD_STATUS_INVALID_ARGUMENT) throw;
      throw specd::sdk::invalid_argument(
          std::string(e.what()) +
          " (to draft across vocabularies set [proposer] vocabulary = \"text\" or "
          "\"intersection\")");
    }
  }

  // The two tokenizers, each id's bytes, and for "intersection" the draft-to-target map.
  void open_translation(const specd_proposer_context& context) {
    target_text_.emplace(context);
    if (!target_text_->available() || !target_text_->has_flags())
      throw specd::sdk::invalid_argument(
          "draft-model: drafting across vocabularies needs the host's text service with "
          "encode_with (the target's tokenizer)");
    if (api_->struct_size <= offsetof(specd_model_api, text) || !api_->text)
      throw specd::sdk::invalid_argument(
          "draft-model: drafting across vocabularies needs the model service's text (a newer "
          "host)");
    const specd_text_service* service = nullptr;
    check(api_->text(host_->context, model_, &service));
    draft_text_.emplace(service);
    specd_model_info info{};
    info.struct_size = sizeof(info);
    check(api_->info(host_->context, model_, &info));
    draft_pieces_ = pieces(*draft_text_, info.vocab_size);
    target_pieces_ = pieces(*target_text_, vocab_);
    // A SentencePiece target puts a space before the first word that its text does not have:
    // the text given to the draft drops it (the draft adds its own prefix, if any).
    target_space_prefix_ =
        target_text_->encode("a") != target_text_->encode("a", SPECD_ENCODE_CONTINUATION);
    if (intersection_) {
      map_ = specd::sdk::intersect_vocabularies(draft_pieces_, target_pieces_);
      if (std::none_of(map_.begin(), map_.end(), [](specd_token t) { return t >= 0; }))
        throw specd::sdk::invalid_argument("draft-model: the draft " + model_path_ +
                                           " and the target share no token: vocabulary = "
                                           "\"intersection\" cannot draft (try \"text\")");
    }
  }

  // The bytes of each id below n ("" for ids the tokenizer does not have: padding).
  static std::vector<std::string> pieces(const specd::sdk::TextService& text, uint32_t n) {
    std::vector<std::string> out(n);
    for (uint32_t i = 0; i < n; ++i) {
      const specd_token id = static_cast<specd_token>(i);
      try {
        out[i] = text.decode(std::span<const specd_token>(&id, 1));
      } catch (const specd::sdk::PluginError&) {
      }
    }
    return out;
  }

  // The draft's tokens for the text of the sequence's accepted tokens.
  const std::vector<specd_token>& draft_context(Sequence& s, std::span<const specd_token> tokens) {
    size_t common = 0;
    while (common < s.seen.size() && common < tokens.size() && s.seen[common] == tokens[common])
      ++common;
    s.seen.resize(common);
    s.seen_ends.resize(common);
    s.text.resize(common ? s.seen_ends.back() : 0);
    for (size_t i = common; i < tokens.size(); ++i) {
      const specd_token t = tokens[i];
      if (t >= 0 && static_cast<size_t>(t) < target_pieces_.size())
        s.text += target_pieces_[static_cast<size_t>(t)];
      s.seen.push_back(t);
      s.seen_ends.push_back(s.text.size());
    }
    std::string_view text = s.text;
    if (target_space_prefix_ && !text.empty() && text.front() == ' ') text.remove_prefix(1);
    return s.draft->update(text);
  }

  // Draft token i across vocabularies: q over the draft's ids from its logits (restricted to
  // the intersection for "intersection"), a draw or the argmax. For "intersection" the token
  // and its q go straight into the output, mapped to the target's ids. False: nothing to draw.
  bool draw_across(Work& w, uint32_t i) {
    auto& item = *w.item;
    std::vector<double> q(w.logits.size());
    if (intersection_) {
      specd::sdk::mask_outside_intersection(w.logits, map_);
      // A constraint masks the draw itself (its q is then the masked distribution drawn
      // from); refusing a token only after drawing it would cut the chain on the draw.
      if (item.filter && !mask_refused(item, i, w.logits)) return false;
    } else {
      for (size_t d = 0; d < w.logits.size(); ++d)  // control and padding ids spell nothing
        if (draft_pieces_[d].empty()) w.logits[d] = -std::numeric_limits<float>::infinity();
    }
    if (!specd::sdk::softmax_at(w.logits, transform_.temperature, q)) return false;
    const uint32_t n = static_cast<uint32_t>(q.size());
    // "text" proposes with a one-hot q whatever the mode, so a token is accepted with
    // probability p(token): the draft's most likely token is its best guess at that.
    const specd_token token =
        greedy_ || !intersection_
            ? specd::sdk::argmax_index(q.data(), n)
            : specd::sdk::sample_index(q.data(), n, host_->rng_uniform(host_->context, item.rng));
    if (intersection_) {
      if (greedy_) std::fill(q.begin(), q.end(), 0.0), q[static_cast<size_t>(token)] = 1.0;
      std::vector<double> scratch;
      double* q_row = item.out.q ? item.out.q + static_cast<size_t>(i) * vocab_
                                 : (scratch.resize(vocab_), scratch.data());
      specd::sdk::map_to_target(q, map_, std::span<double>(q_row, vocab_));
      item.out.tokens[i] = map_[static_cast<size_t>(token)];
      item.out.parents[i] = static_cast<int32_t>(i);
      item.out.n_nodes = i + 1;
    }
    w.drafted.push_back(token);
    w.token = token;
    return true;
  }

  // Draft logits of the intersection set to -inf where the item's constraint refuses their
  // target token after draft tokens [0, i). False: it refuses everything here.
  bool mask_refused(specd::sdk::ProposeItem<Sequence>& item, uint32_t i,
                    std::vector<float>& logits) {
    std::vector<float> row(vocab_, 0.0f);
    if (!item.filter->apply(item.filter->context, item.out.tokens, i, row.data(), vocab_))
      return false;
    for (size_t d = 0; d < logits.size(); ++d)
      if (map_[d] >= 0 && !std::isfinite(row[static_cast<size_t>(map_[d])]))
        logits[d] = -std::numeric_limits<float>::infinity();
    return true;
  }

  // "text": the drafted bytes as the target's tokens, each with a one-hot q (a token "drawn"
  // from a point mass), up to k and the output's capacity and the first token a constraint
  // refuses (a cut that depends only on the path, so the one-hot q stays exact).
  void finish_across(Work& w) {
    if (intersection_ || w.drafted.empty()) return;
    auto& out = w.item->out;
    std::string bytes;
    for (specd_token d : w.drafted) bytes += draft_pieces_[static_cast<size_t>(d)];
    const std::vector<specd_token> ids = target_text_->encode(bytes, SPECD_ENCODE_CONTINUATION);
    out.n_nodes = 0;
    for (size_t i = 0; i < ids.size() && i < std::min(out.capacity, k_); ++i) {
      if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= vocab_) break;
      out.tokens[i] = ids[i];
      out.parents[i] = static_cast<int32_t>(i);
      out.n_nodes = static_cast<uint32_t>(i + 1);
      if (!allowed(*w.item, static_cast<uint32_t>(i))) {
        out.n_nodes = static_cast<uint32_t>(i);
        break;
      }
      if (out.q) {
        double* q_row = out.q + i * vocab_;
        std::fill(q_row, q_row + vocab_, 0.0);
        q_row[ids[i]] = 1.0;
      }
    }
  }

  // Whether the item's constraint (if any) allows its draft token i after tokens [0, i)
  // ("text": checked on the translated chain).
  bool allowed(specd::sdk::ProposeItem<Sequence>& item, uint32_t i) {
    if (!item.filter) return true;
    std::vector<float> row(vocab_, 0.0f);
    return item.filter->apply(item.filter->context, item.out.tokens, i, row.data(), vocab_) &&
           std::isfinite(row[static_cast<size_t>(item.out.tokens[i])]);
  }

  const specd_host* host_;
  const specd_model_api* api_;
  specd_transform transform_;
  uint32_t k_, vocab_;
  bool greedy_ = false;
  std::string model_path_;
  specd_model* model_ = nullptr;
  uint32_t draft_vocab_ = 0, capacity_ = 0, piece_ = 1;
  // Across vocabularies (vocabulary = "text" or "intersection").
  bool across_ = false, intersection_ = false, target_space_prefix_ = false;
  std::optional<specd::sdk::TextService> target_text_, draft_text_;
  std::vector<std::string> draft_pieces_, target_pieces_;
  std::vector<specd_token> map_;  // draft id -> target id, -1 outside the intersection
};

}  // namespace

SPECD_BATCH_PROPOSER_PLUGIN(DraftModelProposer, "org.specd.propose.draft-model", "draft-model",
                            "1.2.0",
                            "independent draft model (a smaller GGUF model) drafting a chain of "
                            "k tokens, one batched pass per draft step",
                            SPECD_PROPOSER_PROVIDES_Q, "rejection")
