#include "models/paged_batch.hpp"

#include <string>

#include "common/error.hpp"
#include "models/batch_mask.hpp"

namespace specd {
namespace {

// Offsets (in int32 elements) of each part of the array.
struct Layout {
  int64_t tokens, positions, prefix, begin, extra, table_begin, tables, write, state_in, state_out,
      replay, window_tables, window_write;
};

// n_state: m for a recurrent pool's rows, else 0 (no state_in, state_out).
Layout layout_of(int64_t m, int64_t n_extra, int64_t n_table, int64_t n_state, int64_t n_replay) {
  Layout l;
  l.tokens = 0;
  l.positions = m;
  l.prefix = 2 * m;
  l.begin = 3 * m;
  l.extra = 4 * m + 1;
  l.table_begin = l.extra + n_extra;
  l.tables = l.table_begin + m;
  l.write = l.tables + n_table;
  l.state_in = l.write + m;
  l.state_out = l.state_in + n_state;
  l.replay = l.state_out + n_state;
  l.window_tables = l.replay + n_replay;
  l.window_write = l.window_tables + n_table;
  return l;
}

}  // namespace

PagedBatchInputs::PagedBatchInputs(std::span<const PagedRows> seqs) : seqs_(seqs) {
  if (seqs.empty()) throw Error("forward: no sequences");
  std::vector<int32_t> tokens, positions, prefix, begin{0}, extra, table_begin, tables, write;
  std::vector<int32_t> state_in, state_out, replay_rows, window_tables, window_write;
  const KvPool* pool = &seqs[0].cache->pool();
  block_rows_ = pool->block_rows();
  recurrent_ = pool->recurrent() != nullptr;
  window_ = pool->window() != nullptr;
  pending_.resize(seqs.size());
  states_.resize(seqs.size());
  replays_.resize(seqs.size());
  for (size_t s = 0; s < seqs.size(); ++s) {
    const PagedRows& in = seqs[s];
    KvCache& cache = *in.cache;
    if (&cache.pool() != pool) throw Error("forward: caches of different pools in one pass");
    for (size_t o = 0; o < s; ++o)
      if (seqs[o].cache == in.cache)
        throw Error("forward: entries " + std::to_string(o) + " and " + std::to_string(s) +
                    " share one cache");
    const int32_t m = static_cast<int32_t>(in.tokens.size());
    const int32_t p0 = in.append ? cache.pending() : 0;
    std::vector<int32_t>& all = pending_[s];
    if (in.append) all = cache.pending_parents();
    all.insert(all.end(), in.parents.begin(), in.parents.end());
    if (in.bidirectional) {
      if (p0 != 0) throw Error("forward: a bidirectional block needs no pending rows before it");
      for (int32_t i = 0; i < m; ++i)
        if (in.parents[i] != i - 1)
          throw Error("forward: a bidirectional block's rows must be a chain");
    }
    const int32_t first = cache.size() + p0;  // the logical row of the first new row
    if (first + m > cache.capacity())
      throw Error("forward: " + std::to_string(first) + " cached + " + std::to_string(m) +
                  " new rows exceed the cache capacity " + std::to_string(cache.capacity()));
    cache.hold(first + m);
    const BatchMask mask = build_batch_mask(cache.size(), all);
    const int32_t e0 = mask.extra_begin[p0], base = static_cast<int32_t>(extra.size());
    const int32_t table_at = static_cast<int32_t>(tables.size());
    const int32_t row0 = static_cast<int32_t>(tokens.size());
    tokens.insert(tokens.end(), in.tokens.begin(), in.tokens.end());
    positions.insert(positions.end(), in.positions.begin(), in.positions.end());
    for (int32_t i = 0; i < m; ++i) {
      // A chain's mask is a prefix; a bidirectional block's is the whole chain for each row.
      prefix.push_back(in.bidirectional ? cache.size() + m : mask.prefix_len[p0 + i]);
      begin.push_back(base + mask.extra_begin[p0 + i + 1] - e0);
      table_begin.push_back(table_at);
      write.push_back(cache.pool_row(first + i));
      if (window_) window_write.push_back(cache.window_row(first + i));
    }
    extra.insert(extra.end(), mask.extra_slots.begin() + e0, mask.extra_slots.end());
    tables.insert(tables.end(), cache.blocks().begin(), cache.blocks().end());
    window_tables.insert(window_tables.end(), cache.window_blocks().begin(),
                         cache.window_blocks().end());
    if (recurrent_) {
      try {
        add_states(in, cache, row0, states_[s], replays_[s], state_in, state_out, replay_rows);
      } catch (...) {
        release_states();  // the destructor does not run for a constructor that throws
        throw;
      }
    }
  }
  m_ = static_cast<int64_t>(tokens.size());
  n_replay_ = static_cast<int64_t>(replay_rows.size());
  if (recurrent_ && n_replay_ > 0) {
    RecurrentPool& r = *pool->recurrent();
    r.begin_pass(static_cast<int32_t>(n_replay_));
    for (KvCache::Replay& replay : replays_)
      if (replay.rows > 0) replay.pass = r.pass();
  }
  n_extra_ = static_cast<int64_t>(extra.size());
  n_table_ = static_cast<int64_t>(tables.size());
  ints_.reserve(static_cast<size_t>(6 * m_ + 1 + n_extra_ + n_table_));
  for (const auto* part :
       {&tokens, &positions, &prefix, &begin, &extra, &table_begin, &tables, &write, &state_in,
        &state_out, &replay_rows, &window_tables, &window_write})
    ints_.insert(ints_.end(), part->begin(), part->end());
}

PagedBatchInputs::~PagedBatchInputs() {
  if (!finished_) release_states();
}

void PagedBatchInputs::release_states() {
  if (!recurrent_) return;
  RecurrentPool& r = *seqs_[0].cache->pool().recurrent();
  for (std::vector<int32_t>& slots : states_) {
    for (int32_t s : slots)
      if (s >= 0) r.release(s);
    slots.clear();
  }
}

void PagedBatchInputs::add_states(const PagedRows& in, KvCache& cache, int32_t row0,
                                  std::vector<int32_t>& kept, KvCache::Replay& replay,
                                  std::vector<int32_t>& state_in, std::vector<int32_t>& state_out,
                                  std::vector<int32_t>& replay_rows) {
  if (in.append) throw Error("forward: a recurrent model's rows replace its pending rows");
  RecurrentPool& r = *cache.pool().recurrent();
  cache.release_pending_states();  // this pass replaces the pending rows
  const int32_t m = static_cast<int32_t>(in.tokens.size());
  kept.assign(static_cast<size_t>(m), -1);
  bool chain = true;
  for (int32_t i = 0; i < m; ++i) chain = chain && in.parents[i] == i - 1;
  // A chain that a commit may cut before its end is stored for replay (its last state alone
  // kept); trees, and every chain under kSnapshot, keep the state of each row that may end a
  // commit.
  const bool replays =
      chain && in.keep_states_from < m - 1 && r.restore() == RecurrentRestore::kReplay;
  if (replays) {
    replay.first = static_cast<int32_t>(replay_rows.size());
    replay.rows = m;
    for (int32_t i = 0; i < m; ++i) replay_rows.push_back(row0 + i);
  }
  for (int32_t i = 0; i < m; ++i) {
    const int32_t parent = in.parents[i];
    // From the committed state, from the row before (a chain), or from a branch point's slot.
    int32_t from = -1;
    if (parent < 0) {
      from = cache.state_slot();
    } else if (parent != i - 1) {
      from = kept[static_cast<size_t>(parent)];
      if (from < 0)
        throw Error("forward: row " + std::to_string(i) + "'s parent " + std::to_string(parent) +
                    " keeps no recurrent state (a tree's rows must be at or after "
                    "keep_states_from)");
    }
    if (i == m - 1 || (!replays && i >= in.keep_states_from))
      kept[static_cast<size_t>(i)] = r.take();
    state_in.push_back(from);
    state_out.push_back(kept[static_cast<size_t>(i)]);
  }
}

PagedBatch PagedBatchInputs::views(const Buffer& buffer, uint64_t offset) const {
  const Layout l = layout_of(m_, n_extra_, n_table_, recurrent_ ? m_ : 0, n_replay_);
  auto at = [&](int64_t first, int64_t count) {
    return buffer.view(SPECD_DTYPE_I32, 1, count, offset + static_cast<uint64_t>(first) * 4);
  };
  PagedBatch b;
  b.positions = at(l.positions, m_);
  b.prefix_len = at(l.prefix, m_);
  b.extra_begin = at(l.begin, m_ + 1);
  if (n_extra_ > 0) b.extra_slots = at(l.extra, n_extra_);
  b.table_begin = at(l.table_begin, m_);
  b.block_table = at(l.tables, n_table_);
  b.write_rows = at(l.write, m_);
  if (recurrent_) {
    b.state_in = at(l.state_in, m_);
    b.state_out = at(l.state_out, m_);
    if (n_replay_ > 0) b.replay_rows = at(l.replay, n_replay_);
  }
  if (window_) {
    b.window_table = at(l.window_tables, n_table_);
    b.window_write_rows = at(l.window_write, m_);
  }
  b.block_rows = block_rows_;
  return b;
}

View PagedBatchInputs::tokens(const Buffer& buffer, uint64_t offset) const {
  return buffer.view(SPECD_DTYPE_I32, 1, m_, offset);
}

void PagedBatchInputs::finish() {
  for (size_t s = 0; s < seqs_.size(); ++s) {
    seqs_[s].cache->set_pending(pending_[s]);
    if (recurrent_) seqs_[s].cache->set_pending_states(std::move(states_[s]), replays_[s]);
  }
  finished_ = true;
}

}  // namespace specd
