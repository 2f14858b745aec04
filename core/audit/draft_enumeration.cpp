#include "audit/draft_enumeration.hpp"

#include <algorithm>
#include <numeric>

#include "sampling/sample_row.hpp"

namespace specd {

specd_draft_tree OwnedDraft::tree() const {
  specd_draft_tree t{};
  t.struct_size = sizeof(specd_draft_tree);
  t.n_nodes = n_nodes();
  t.vocab_size = vocab;
  t.scheme = scheme;
  t.tokens = tokens.data();
  t.parents = parents.data();
  t.q = with_q ? q.data() : nullptr;
  return t;
}

specd_target_dists OwnedDraft::target() const {
  specd_target_dists d{};
  d.struct_size = sizeof(specd_target_dists);
  d.n_rows = n_nodes() + 1;
  d.vocab_size = vocab;
  d.p = p.data();
  return d;
}

std::vector<specd_token> OwnedDraft::context(uint32_t node) const {
  std::vector<specd_token> out;
  for (uint32_t n = node; n != 0; n = static_cast<uint32_t>(parents[n - 1]))
    out.push_back(tokens[n - 1]);
  std::reverse(out.begin(), out.end());
  return out;
}

namespace {

// A slot is a child position still to fill: (parent node, sibling index, parent depth).
struct Slot {
  uint32_t parent;
  uint32_t sibling;
  uint32_t depth;
};

// Builds drafts slot by slot in breadth-first order. `pick` decides the token of each slot:
// it receives the weights and calls back with (token, probability) for each choice it makes.
class Builder {
 public:
  Builder(const DraftSpec& spec, const RowFn& q_row, const RowFn& p_row)
      : spec_(spec), q_row_(q_row), p_row_(p_row) {
    draft_.vocab = spec.vocab;
    draft_.scheme = spec.scheme;
    draft_.with_q = spec.with_q;
    add_rows(0);
    push_children(0, 0);
  }

  // Fills slots from `next` on; `choose(weights, cont)` either enumerates or samples.
  template <class Choose, class Done>
  void fill(size_t next, double prob, Choose& choose, Done& done) {
    if (next == slots_.size()) return done(draft_, prob);
    const Slot slot = slots_[next];
    std::vector<double> w(q_of(slot.parent).begin(), q_of(slot.parent).end());
    if (spec_.scheme == SPECD_SIBLINGS_DETERMINISTIC) {
      const std::vector<uint32_t> order = ranked(w);
      if (slot.sibling >= order.size()) return fill(next + 1, prob, choose, done);
      return place(next, order[slot.sibling], prob, choose, done);
    }
    if (spec_.scheme == SPECD_SIBLINGS_WITHOUT_REPLACEMENT) {
      for (uint32_t c : children_of(slot.parent)) w[draft_.tokens[c - 1]] = 0.0;
      double mass = std::accumulate(w.begin(), w.end(), 0.0);
      if (!(mass > 0)) return fill(next + 1, prob, choose, done);  // nothing left to draw
      for (double& v : w) v /= mass;
    }
    choose(w, [&](uint32_t token, double pr) { place(next, token, prob * pr, choose, done); });
  }

 private:
  std::span<const double> q_of(uint32_t node) const {
    return {draft_.q.data() + static_cast<size_t>(node) * spec_.vocab, spec_.vocab};
  }

  std::vector<uint32_t> children_of(uint32_t node) const {
    std::vector<uint32_t> out;
    for (uint32_t i = 1; i <= draft_.n_nodes(); ++i)
      if (static_cast<uint32_t>(draft_.parents[i - 1]) == node) out.push_back(i);
    return out;
  }

  static std::vector<uint32_t> ranked(const std::vector<double>& w) {
    std::vector<uint32_t> order(w.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return w[a] > w[b]; });
    return order;
  }

  void add_rows(uint32_t node) {
    const std::vector<specd_token> ctx = draft_.context(node);
    std::vector<double> q = q_row_(ctx), p = p_row_(ctx);
    draft_.q.insert(draft_.q.end(), q.begin(), q.end());
    draft_.p.insert(draft_.p.end(), p.begin(), p.end());
  }

  void push_children(uint32_t node, uint32_t depth) {
    if (depth < spec_.branching.size())
      for (uint32_t s = 0; s < spec_.branching[depth]; ++s) slots_.push_back({node, s, depth});
  }

  // Creates the node of slot `next` with `token`, recurses, then undoes it.
  template <class Choose, class Done>
  void place(size_t next, uint32_t token, double prob, Choose& choose, Done& done) {
    const Slot slot = slots_[next];
    const size_t n_slots = slots_.size();
    draft_.tokens.push_back(static_cast<specd_token>(token));
    draft_.parents.push_back(static_cast<int32_t>(slot.parent));
    const uint32_t node = draft_.n_nodes();
    add_rows(node);
    push_children(node, slot.depth + 1);
    fill(next + 1, prob, choose, done);
    slots_.resize(n_slots);
    draft_.tokens.pop_back();
    draft_.parents.pop_back();
    draft_.q.resize(draft_.q.size() - spec_.vocab);
    draft_.p.resize(draft_.p.size() - spec_.vocab);
  }

  const DraftSpec& spec_;
  const RowFn& q_row_;
  const RowFn& p_row_;
  OwnedDraft draft_;
  std::vector<Slot> slots_;
};

}  // namespace

void enumerate_drafts(const DraftSpec& spec, const RowFn& q_row, const RowFn& p_row,
                      const std::function<void(const OwnedDraft&, double)>& visit) {
  Builder builder(spec, q_row, p_row);
  auto choose = [](const std::vector<double>& w, auto&& cont) {
    for (uint32_t t = 0; t < w.size(); ++t)
      if (w[t] > 0) cont(t, w[t]);
  };
  auto done = [&](const OwnedDraft& d, double prob) { visit(d, prob); };
  builder.fill(0, 1.0, choose, done);
}

OwnedDraft sample_draft(const DraftSpec& spec, const RowFn& q_row, const RowFn& p_row, Rng& rng) {
  Builder builder(spec, q_row, p_row);
  auto choose = [&](const std::vector<double>& w, auto&& cont) {
    const uint32_t t = sample(w, rng);
    cont(t, w[t]);
  };
  OwnedDraft out;
  auto done = [&](const OwnedDraft& d, double) { out = d; };
  builder.fill(0, 1.0, choose, done);
  return out;
}

}  // namespace specd
