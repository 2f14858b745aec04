// A draft head that runs on the target's features (EAGLE, MTP), for many sequences: a
// BoundHead shared by all of them, and per sequence (FeatureHead::State) the head's KV cache
// and the true target features the engine handed over. catch_up brings every drafting
// sequence's cache up to date with its features in batched passes (pieces of at most the
// head device's invariant_max_rows rows per sequence and pass, so a sequence's rows have the
// same bits whatever shares the passes); forward runs pending elements of several sequences
// in one pass.
//
// A cache holds the elements built from true features (committed); elements a proposer
// drafts from the head's own output features stay pending and are dropped by the next
// catch_up. Thread rule: like its proposer, used by one thread at a time.
//
// Element i of a sequence is built from feature i and, by default, token i + 1 (specd's
// heads: the feature of a position predicts with the next token). With `shifted` (llama.cpp's
// MTP layers) it is token i, and feature 0 is a row of zeros: element i pairs the token at
// position i with the feature of position i - 1. Element i sits at RoPE position i either way.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/bound_head.hpp"

namespace specd::strategies {

class FeatureHead {
 public:
  // One sequence: its cache and its true target features.
  struct State {
    const FeatureHead* head = nullptr;
    specd_model_cache* cache = nullptr;
    std::vector<float> features;  // [n, dim]: one per sequence element but the last
    ~State() {
      if (cache) head->head_.api()->cache_free(head->head_.context(), cache);
    }
  };

  // A sequence's rows in one pass (forward): as specd_model_api.head_forward's arguments.
  struct Rows {
    State* state = nullptr;
    const float* features = nullptr;  // [m, dim]
    std::vector<specd_token> tokens;
    std::vector<int32_t> positions, parents;
    float* logits = nullptr;  // [m - first_logit_row, vocab]
    float* hidden = nullptr;  // [m, dim] or null
    uint32_t first_logit_row = 0;
  };

  // What catch_up brings up to date: a state, its whole accepted sequence, and where the last
  // element's logits [vocab] and output feature [dim] go.
  struct CatchUp {
    State* state = nullptr;
    std::span<const specd_token> sequence;
    float* logits = nullptr;
    float* feature = nullptr;
  };

  // `who`, `architecture`: as BoundHead; `extra_capacity` cache rows are reserved for
  // drafting.
  FeatureHead(sdk::Host host, const std::string& who, const std::vector<std::string>& architectures,
              const char* model_path, const specd_proposer_context& context,
              uint32_t extra_capacity)
      : head_(host, who, architectures, model_path, context),
        capacity_(std::max<uint32_t>(4096, 2 * head_.info().context_length) + extra_capacity),
        piece_(std::max<uint32_t>(head_.info().invariant_max_rows, 1)),
        shifted_(std::string(head_.info().architecture) == "nextn"),
        skips_logits_(host.raw()->abi_minor >= 7) {}
  FeatureHead(const FeatureHead&) = delete;
  FeatureHead& operator=(const FeatureHead&) = delete;

  const BoundHead& bound() const { return head_; }
  uint32_t vocab() const { return head_.info().vocab_size; }  // the head's output rows
  uint32_t dim() const { return head_.info().hidden_dim; }
  uint32_t capacity() const { return capacity_; }
  // Features a state holds: one per sequence element but the last (shifted: one per element,
  // the first a row of zeros).
  uint32_t n_features(const State& s) const {
    return static_cast<uint32_t>(s.features.size() / dim());
  }
  // Whether a state's features cover a sequence of `tokens` tokens, its elements then running
  // up to the last token.
  bool covers(const State& s, size_t tokens) const {
    return n_features(s) + (shifted_ ? 0 : 1) == tokens;
  }
  bool shifted() const { return shifted_; }

  std::unique_ptr<State> open() const {
    auto s = std::make_unique<State>();
    s->head = this;
    check(head_.api()->cache_create(head_.context(), head_.model(), capacity_, &s->cache));
    return s;
  }

  // A new sequence: empties the cache and keeps the prompt's features.
  void begin(State& s, std::span<const specd_token> prompt, const float* hidden) const {
    check(head_.api()->truncate(head_.context(), head_.model(), s.cache, 0));
    s.features.clear();
    if (shifted_) s.features.assign(dim(), 0.0f);
    if (hidden && prompt.size() > 1) append(s, hidden, prompt.size() - 1);
  }

  // Appends the features of the accepted tokens and the root (accepted.size() + 1 rows).
  void commit(State& s, std::span<const specd_token> accepted, const float* hidden) const {
    if (hidden) append(s, hidden, accepted.size() + 1);
  }

  // For each job: runs and commits the elements whose true features are not in its cache yet
  // (the last is re-run when all are, so its outputs are at hand) and writes the last one's
  // logits and output feature. Element i pairs feature i with token sequence[i + 1]
  // (shifted: sequence[i]).
  void catch_up(std::span<CatchUp> jobs) {
    struct Pending {
      CatchUp* job;
      uint32_t next, end;  // elements [next, end) still to run
    };
    std::vector<Pending> pending;
    for (CatchUp& j : jobs) {
      const uint32_t n_feat = n_features(*j.state);
      const uint32_t done =
          std::min(head_.api()->cache_size(head_.context(), j.state->cache), n_feat - 1);
      check(head_.api()->truncate(head_.context(), head_.model(), j.state->cache, done));
      pending.push_back({&j, done, n_feat});
    }
    std::vector<Rows> rows;
    std::vector<std::vector<float>> logits, hidden;
    for (;;) {
      rows.clear();
      std::vector<Pending*> in_pass;
      for (Pending& p : pending) {
        if (p.next == p.end) continue;
        const uint32_t m = std::min(p.end - p.next, piece_);
        Rows& r = rows.emplace_back();
        r.state = p.job->state;
        r.features = p.job->state->features.data() + static_cast<size_t>(p.next) * dim();
        for (uint32_t i = 0; i < m; ++i) {
          r.tokens.push_back(p.job->sequence[p.next + i + (shifted_ ? 0 : 1)]);
          r.positions.push_back(static_cast<int32_t>(p.next + i));
          r.parents.push_back(static_cast<int32_t>(i) - 1);
        }
        in_pass.push_back(&p);
      }
      if (rows.empty()) break;
      logits.resize(rows.size());
      hidden.resize(rows.size());
      for (size_t e = 0; e < rows.size(); ++e) {
        // Only the job's last element's logits are used: a host of minor >= 7 computes no
        // others (the head's LM head is the dear part of its pass).
        const uint32_t m = static_cast<uint32_t>(rows[e].tokens.size());
        const bool last = in_pass[e]->next + m == in_pass[e]->end;
        rows[e].first_logit_row = skips_logits_ ? (last ? m - 1 : m) : 0;
        logits[e].resize((m - rows[e].first_logit_row) * vocab());
        hidden[e].resize(m * dim());
        rows[e].logits = logits[e].empty() ? nullptr : logits[e].data();
        rows[e].hidden = hidden[e].data();
      }
      forward(rows);
      for (size_t e = 0; e < rows.size(); ++e) {
        Pending& p = *in_pass[e];
        const uint32_t m = static_cast<uint32_t>(rows[e].tokens.size());
        std::vector<int32_t> kept(m);
        for (uint32_t i = 0; i < m; ++i) kept[i] = static_cast<int32_t>(i);
        check(head_.api()->commit(head_.context(), head_.model(), p.job->state->cache, kept.data(),
                                  m));
        p.next += m;
        if (p.next == p.end) {
          std::copy(logits[e].end() - vocab(), logits[e].end(), p.job->logits);
          std::copy(hidden[e].end() - dim(), hidden[e].end(), p.job->feature);
        }
      }
    }
  }

  // One head pass over the pending elements of several states (specd_model_api
  // forward_batch; the states' rows accumulate as head_forward's do).
  void forward(std::span<Rows> rows) const {
    std::vector<specd_model_batch_entry> entries(rows.size());
    std::vector<const specd_model_batch_entry*> pointers(rows.size());
    for (size_t e = 0; e < rows.size(); ++e) {
      const Rows& r = rows[e];
      entries[e] = {sizeof(specd_model_batch_entry),
                    static_cast<uint32_t>(r.tokens.size()),
                    r.state->cache,
                    r.tokens.data(),
                    r.positions.data(),
                    r.parents.data(),
                    r.features,
                    r.first_logit_row,
                    0,
                    r.logits,
                    r.hidden};
      pointers[e] = &entries[e];
    }
    check(head_.api()->forward_batch(head_.context(), head_.model(), pointers.data(),
                                     static_cast<uint32_t>(pointers.size())));
  }

  void check(specd_status* status) const { head_.check(status); }

 private:
  // Keeps `rows` rows of target features as head features (fused first by an EAGLE-3 head).
  void append(State& s, const float* hidden, size_t rows) const {
    if (!head_.fuses()) {
      s.features.insert(s.features.end(), hidden, hidden + rows * dim());
      return;
    }
    const size_t at = s.features.size();
    s.features.resize(at + rows * dim());
    check(head_.api()->head_encode(head_.context(), head_.model(), hidden,
                                   static_cast<uint32_t>(rows), s.features.data() + at));
  }

  BoundHead head_;
  uint32_t capacity_;
  uint32_t piece_;     // rows of one sequence per catch-up pass
  bool shifted_;       // llama.cpp's MTP layers: element i pairs feature i with token i
  bool skips_logits_;  // the host computes a head's logits for the rows asked only
};

// The sequence half of the SDK's proposer protocol for a proposer that drafts with a
// FeatureHead: open, begin and commit hand each sequence to the head, which keeps its cache
// and true features. `Proposer` holds the head as `head_` and befriends this class.
template <class Proposer>
class FeatureHeadSequences {
 public:
  using Sequence = FeatureHead::State;

  std::unique_ptr<Sequence> open() { return head().open(); }

  void begin(Sequence& s, std::span<const specd_token> prompt, const float* hidden) {
    head().begin(s, prompt, hidden);
  }

  void commit(Sequence& s, std::span<const specd_token> accepted, specd_token,
              const float* hidden) {
    head().commit(s, accepted, hidden);
  }

 private:
  FeatureHead& head() { return static_cast<Proposer&>(*this).head_; }
};

}  // namespace specd::strategies
