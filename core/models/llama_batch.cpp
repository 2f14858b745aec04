// LlamaModel::forward_batch and grow: several sequences in one pass, and caches that grow.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "models/batch_mask.hpp"
#include "models/kv_layout.hpp"
#include "models/llama_model.hpp"

namespace specd {

void LlamaModel::forward_batch(std::span<const ForwardEntry> entries) {
  if (entries.empty()) throw Error("forward_batch: no entries");
  const ModelInfo& in = info_;
  const int64_t piece = std::max<uint32_t>(device_->info().invariant_max_rows, 1);
  const size_t n = entries.size();
  std::vector<BatchMask> masks;
  masks.reserve(n);
  int32_t M = 0, logit_rows = 0, max_m = 0;
  for (size_t e = 0; e < n; ++e) {
    const ForwardEntry& en = entries[e];
    if (!en.cache) throw Error("forward_batch: entry " + std::to_string(e) + " has no cache");
    for (size_t o = 0; o < e; ++o)
      if (entries[o].cache == en.cache)
        throw Error("forward_batch: entries " + std::to_string(o) + " and " + std::to_string(e) +
                    " share one cache");
    check_entry(*en.cache, en.tokens, en.positions, en.parents, en.logits, en.first_logit_row);
    masks.push_back(build_batch_mask(en.cache->size(), en.parents));
    const int32_t m = static_cast<int32_t>(en.tokens.size());
    M += m;
    max_m = std::max(max_m, m);
    logit_rows += m - en.first_logit_row;
  }

  // One upload of every int32 input: tokens [M], positions [M], per entry prefix_len [m],
  // extra_begin [m + 1] and extra_slots, then iota [max_m] and the logit rows [L].
  std::vector<int32_t> ints;
  ints.reserve(3 * static_cast<size_t>(M) + n + max_m + logit_rows);
  for (const ForwardEntry& en : entries)
    ints.insert(ints.end(), en.tokens.begin(), en.tokens.end());
  for (const ForwardEntry& en : entries)
    ints.insert(ints.end(), en.positions.begin(), en.positions.end());
  std::vector<size_t> mask_at(n);
  for (size_t e = 0; e < n; ++e) {
    mask_at[e] = ints.size();
    const BatchMask& b = masks[e];
    ints.insert(ints.end(), b.prefix_len.begin(), b.prefix_len.end());
    ints.insert(ints.end(), b.extra_begin.begin(), b.extra_begin.end());
    ints.insert(ints.end(), b.extra_slots.begin(), b.extra_slots.end());
  }
  const size_t iota_at = ints.size();
  for (int32_t i = 0; i < max_m; ++i) ints.push_back(i);
  const size_t logit_at = ints.size();
  {
    int32_t row0 = 0;
    for (const ForwardEntry& en : entries) {
      const int32_t m = static_cast<int32_t>(en.tokens.size());
      for (int32_t i = en.first_logit_row; i < m; ++i) ints.push_back(row0 + i);
      row0 += m;
    }
  }
  ensure_scratch(M, logit_rows, ints.size());
  s_.block.ensure_kv(*device_, layers_.front().shape(), M);
  s_.ints.upload(ints.data(), ints.size() * 4);
  auto ints_view = [&](size_t at, int64_t count) {
    return s_.ints.view(SPECD_DTYPE_I32, 1, count, at * 4);
  };
  const View v_pos = ints_view(M, M);
  const View v_iota = ints_view(iota_at, max_m);

  const int64_t d = in.n_embd, kvd = layers_.front().shape().kv_dim();
  const View x = s_.x.view(SPECD_DTYPE_F32, M, d);  // residual stream of every entry [M, d]
  Device& dev = *device_;
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min<int64_t>(piece, M - r);
    dev.get_rows(tok_embd_, ints_view(r, p), x.slice_rows(r, p));
  }
  std::vector<BlockSequence> seqs(n);
  {
    int64_t row0 = 0;
    for (size_t e = 0; e < n; ++e) {
      const int64_t m = static_cast<int64_t>(entries[e].tokens.size());
      const int64_t n_extra = static_cast<int64_t>(masks[e].extra_slots.size());
      BlockSequence& sq = seqs[e];
      sq.first_row = entries[e].cache->size();
      sq.row0 = row0;
      sq.m = m;
      sq.prefix_len = ints_view(mask_at[e], m);
      sq.extra_begin = ints_view(mask_at[e] + m, m + 1);
      if (n_extra) sq.extra_slots = ints_view(mask_at[e] + 2 * m + 1, n_extra);
      row0 += m;
    }
  }
  for (int32_t l = 0; l < in.n_layer; ++l) {
    for (size_t e = 0; e < n; ++e) {
      const KvCache& c = *entries[e].cache;
      seqs[e].k_cache = kv_rows(c.k_[l], c.capacity(), kvd);
      seqs[e].v_cache = kv_rows(c.v_[l], c.capacity(), kvd);
    }
    layers_[l].run_batch(x, v_pos, seqs, v_iota, piece, s_.block);
  }
  {
    int64_t row0 = 0;
    for (const ForwardEntry& en : entries) {
      const int64_t m = static_cast<int64_t>(en.tokens.size());
      if (en.hidden)
        s_.x.download(en.hidden, static_cast<uint64_t>(m) * d * 4,
                      static_cast<uint64_t>(row0) * d * 4);
      row0 += m;
    }
  }
  if (logit_rows > 0) {
    // The rows whose logits are wanted, gathered (verbatim) into one block, then the final
    // norm and the output projection piece by piece.
    if (logit_rows > s_.packed_rows) {
      s_.packed = dev.alloc(static_cast<uint64_t>(logit_rows) * d * 4);
      s_.packed_rows = logit_rows;
    }
    const View packed = s_.packed.view(SPECD_DTYPE_F32, logit_rows, d);
    dev.copy_rows(x, ints_view(logit_at, logit_rows), packed);
    const View h = s_.block.h.view(SPECD_DTYPE_F32, logit_rows, d);
    const View out = s_.logits.view(SPECD_DTYPE_F32, logit_rows, in.vocab_size);
    for (int64_t r = 0; r < logit_rows; r += piece) {
      const int64_t p = std::min<int64_t>(piece, logit_rows - r);
      dev.rms_norm(packed.slice_rows(r, p), output_norm_, in.rms_eps, h.slice_rows(r, p));
      dev.matmul(h.slice_rows(r, p), output_, out.slice_rows(r, p));
    }
    uint64_t at = 0;
    for (const ForwardEntry& en : entries) {
      const uint64_t rows = static_cast<uint64_t>(en.tokens.size() - en.first_logit_row);
      if (rows == 0) continue;
      s_.logits.download(en.logits, rows * in.vocab_size * 4, at * in.vocab_size * 4);
      at += rows;
    }
  }
  for (const ForwardEntry& en : entries)
    en.cache->parents_.assign(en.parents.begin(), en.parents.end());
}

void LlamaModel::grow(KvCache& cache, int32_t capacity) {
  if (capacity < cache.size())
    throw Error("grow: capacity " + std::to_string(capacity) + " is below the " +
                std::to_string(cache.size()) + " committed rows");
  if (cache.k_.size() != static_cast<size_t>(info_.n_layer))
    throw Error("grow: the cache belongs to a different model");
  std::unique_ptr<KvCache> fresh = new_cache(capacity);
  const int32_t n = cache.size();
  if (n > 0) {
    std::vector<int32_t> idx(n);
    for (int32_t i = 0; i < n; ++i) idx[i] = i;
    fresh->index_.upload(idx.data(), idx.size() * 4);
    const View vi = fresh->index_.view(SPECD_DTYPE_I32, 1, n);
    const int64_t kvd = static_cast<int64_t>(info_.n_head_kv) * info_.head_dim;
    for (int32_t l = 0; l < info_.n_layer; ++l) {
      device_->copy_rows(kv_rows(cache.k_[l], n, kvd), vi, kv_rows(fresh->k_[l], n, kvd));
      device_->copy_rows(kv_rows(cache.v_[l], n, kvd), vi, kv_rows(fresh->v_[l], n, kvd));
    }
    device_->synchronize();
  }
  cache.k_ = std::move(fresh->k_);
  cache.v_ = std::move(fresh->v_);
  cache.index_ = std::move(fresh->index_);
  cache.capacity_ = capacity;
  cache.parents_.clear();
}

}  // namespace specd
