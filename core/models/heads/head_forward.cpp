// HeadModel's forward passes (Medusa; EAGLE and MTP over their own KV cache) and cache
// bookkeeping. Formulas: train/FORMATS.md, sections 4-6.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "models/batch_mask.hpp"
#include "models/heads/head_model.hpp"
#include "models/paged_batch.hpp"

namespace specd {

void HeadModel::ensure_scratch(int64_t m) {
  if (m <= rows_) return;
  const int64_t d = info_.n_embd, V = info_.vocab_size;
  u_ = device_->alloc(m * 2 * d * 4);
  x_ = device_->alloc(m * d * 4);
  h_ = device_->alloc(m * d * 4);
  t_ = device_->alloc(m * d * 4);
  logits_ = device_->alloc(m * info_.n_heads * V * 4);
  std::vector<float> ones(static_cast<size_t>(m * d), 1.0f);
  ones_ = device_->alloc(ones.size() * 4);
  ones_.upload(ones.data(), ones.size() * 4);
  std::vector<int32_t> zeros(static_cast<size_t>(m), 0);
  zero_ids_ = device_->alloc(zeros.size() * 4);
  zero_ids_.upload(zeros.data(), zeros.size() * 4);
  rows_ = m;
}

void HeadModel::broadcast(const View& row, const View& y) {
  device_->get_rows(row, zero_ids_.view(SPECD_DTYPE_I32, 1, y.rows()), y);
}

void HeadModel::forward(KvCache* cache, const float* features, std::span<const int32_t> tokens,
                        std::span<const int32_t> positions, std::span<const int32_t> parents,
                        float* logits, float* hidden) {
  Entry e;
  e.cache = cache;
  e.features = features;
  e.m = static_cast<int32_t>(tokens.size());
  e.logits = logits;
  e.hidden = hidden;
  if (info_.kind != HeadKind::kMedusa) {
    e.tokens = tokens;
    e.positions = positions;
    e.parents = parents;
  }
  forward_batch(std::span<const Entry>(&e, 1));
}

void HeadModel::check_cache(const KvCache& cache, const char* op) const {
  if (!kv_pool_ || &cache.pool() != kv_pool_.get())
    throw Error(std::string(op) + ": the cache belongs to a different head");
}

void HeadModel::forward_batch(std::span<const Entry> entries) {
  if (entries.empty()) throw Error("forward: no entries");
  int64_t M = 0;
  for (const Entry& e : entries) {
    if (e.m <= 0) throw Error("forward: no rows");
    M += e.m;
  }
  // As LlamaModel::forward_batch: pieces the device computes row by row invariantly when
  // several sequences share the pass, one piece for one sequence.
  const int64_t invariant = std::max<uint32_t>(device_->info().invariant_max_rows, 1);
  const int64_t piece = entries.size() == 1 ? std::max<int64_t>(invariant, M) : invariant;
  for (const Entry& e : entries)
    if (e.first_logit_row < 0 || e.first_logit_row > e.m ||
        (e.first_logit_row > 0 && info_.kind == HeadKind::kMedusa))
      throw Error("forward: first_logit_row " + std::to_string(e.first_logit_row) +
                  " is outside [0, " + std::to_string(e.m) + "] (Medusa: 0)");
  select_logit_rows(entries);
  if (info_.kind == HeadKind::kMedusa) {
    for (const Entry& e : entries)
      if (e.cache || e.hidden)
        throw Error("forward: a Medusa head takes no cache and gives no features");
    forward_medusa(entries, piece);
    return;
  }
  if (info_.kind == HeadKind::kDflash) {
    forward_dflash(entries, piece);
    return;
  }
  for (const Entry& e : entries) {
    if (!e.cache) throw Error("forward: " + info_.architecture + " needs its cache");
    if (!e.features) throw Error("forward: " + info_.architecture + " needs features");
    check_cache(*e.cache, "forward");
    if (static_cast<int32_t>(e.tokens.size()) != e.m || e.positions.size() != e.tokens.size() ||
        e.parents.size() != e.tokens.size())
      throw Error("forward: tokens, positions and parents differ in length");
    for (int32_t i = 0; i < e.m; ++i) {
      if (e.tokens[i] < 0 || e.tokens[i] >= info_.vocab_size)
        throw Error("forward: token " + std::to_string(e.tokens[i]) + " is outside the vocabulary");
      if (e.positions[i] < 0) throw Error("forward: negative position at row " + std::to_string(i));
    }
  }
  if (info_.kind == HeadKind::kEagle3)
    forward_eagle3(entries, piece);
  else if (info_.kind == HeadKind::kNextn)
    forward_nextn(entries, piece);
  else
    forward_blocks(entries, piece);
}

void HeadModel::check_finite(const float* logits, size_t n) const {
  // EAGLE and Medusa rank these logits directly (top-k), without the sampling transform
  // that would catch a NaN: a non-finite value would make the ranking meaningless.
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(logits[i]))
      throw Error(info_.path + ": the head produced a non-finite logit (row " +
                  std::to_string(i / static_cast<size_t>(info_.vocab_size)) +
                  "); its weights or its input features hold NaN or inf");
}

void HeadModel::forward_medusa(std::span<const Entry> entries, int64_t piece) {
  int64_t M = 0;
  for (const Entry& e : entries) M += e.m;
  ensure_scratch(M);
  const int64_t d = info_.n_embd, V = info_.vocab_size, K = info_.n_heads;
  Device& dev = *device_;
  {
    int64_t row0 = 0;
    for (const Entry& e : entries) {
      x_.upload(e.features, static_cast<uint64_t>(e.m * d) * 4,
                static_cast<uint64_t>(row0 * d) * 4);
      row0 += e.m;
    }
  }
  const View x_all = x_.view(SPECD_DTYPE_F32, M, d);  // hidden_t [M, d], then bias rows
  const View z_all = h_.view(SPECD_DTYPE_F32, M, d);  // z_t [M, d]
  const View t_all = t_.view(SPECD_DTYPE_F32, M, d);  // r_{N,t} [M, d]
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    const View x = x_all.slice_rows(r, p), z = z_all.slice_rows(r, p), t = t_all.slice_rows(r, p);
    const View ones = ones_.view(SPECD_DTYPE_F32, p, d);
    dev.rms_norm(x, output_norm_, target_eps_, z);
    for (int64_t n = 0; n < K; ++n) {
      const MedusaHead& head = medusa_[n];
      dev.matmul(z, head.fc, t);
      broadcast(head.bias, x);
      dev.add(t, x, t);
      dev.swiglu(t, ones, t);  // silu
      dev.add(t, z, t);
      const View out =
          logits_.view(SPECD_DTYPE_F32, p, V, static_cast<uint64_t>((r * K + n) * V) * 4,
                       K * V * 4);  // logits[r.., n, :] of [M, K, V]
      dev.matmul(t, output_, out);
    }
  }
  int64_t row0 = 0;
  for (const Entry& e : entries) {
    const uint64_t count = static_cast<uint64_t>(e.m * K * V);
    logits_.download(e.logits, count * 4, static_cast<uint64_t>(row0 * K * V) * 4);
    check_finite(e.logits, count);
    row0 += e.m;
  }
}

std::vector<PagedRows> HeadModel::paged_rows(std::span<const Entry> entries, int64_t& M) {
  std::vector<PagedRows> rows(entries.size());
  M = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    rows[i] = {e.cache, e.tokens, e.positions, e.parents, true};  // a tree grows per call
    M += e.m;
  }
  return rows;
}

void HeadModel::upload_pass(const PagedBatchInputs& inputs, int64_t M) {
  const std::vector<int32_t>& ints = inputs.ints();
  if (!ints_ || ints_.size() < ints.size() * 4) ints_ = device_->alloc(ints.size() * 4 * 2);
  ints_.upload(ints.data(), ints.size() * 4);
  ensure_scratch(M);
}

void HeadModel::block_and_output(const View& x, const PagedBatchInputs& inputs, int64_t n_out,
                                 int64_t piece, const View* attn_input) {
  const int64_t M = x.rows();
  block_scratch_.ensure(*device_, info_.block, M);
  block_->run(x, inputs.views(ints_), kv_pool_->k(0), kv_pool_->v(0), piece, block_scratch_,
              attn_input);
  output_logits(x, n_out, piece, &output_norm_);
}

void HeadModel::select_logit_rows(std::span<const Entry> entries) {
  logit_rows_.clear();
  int32_t row0 = 0;
  for (const Entry& e : entries) {
    for (int32_t i = e.first_logit_row; i < e.m; ++i) logit_rows_.push_back(row0 + i);
    row0 += e.m;
  }
}

void HeadModel::output_logits(const View& x, int64_t n_out, int64_t piece, const View* norm) {
  const int64_t M = x.rows(), R = static_cast<int64_t>(logit_rows_.size()), d = info_.n_embd;
  if (R == 0) return;
  View rows = x;  // the wanted rows, gathered when not all are
  if (R < M) {
    if (!logit_ids_ || logit_ids_.size() < static_cast<uint64_t>(R) * 4)
      logit_ids_ = device_->alloc(static_cast<uint64_t>(R) * 4 * 2);
    logit_ids_.upload(logit_rows_.data(), static_cast<uint64_t>(R) * 4);
    rows = t_.view(SPECD_DTYPE_F32, R, d);
    device_->copy_rows(x, logit_ids_.view(SPECD_DTYPE_I32, 1, R), rows);
  }
  const View h = h_.view(SPECD_DTYPE_F32, R, d);
  const View out = logits_.view(SPECD_DTYPE_F32, R, n_out);  // [R, n_out]
  for (int64_t r = 0; r < R; r += piece) {
    const int64_t p = std::min(piece, R - r);
    const View in = rows.slice_rows(r, p);
    if (norm) device_->rms_norm(in, *norm, target_eps_, h.slice_rows(r, p));
    device_->matmul(norm ? h.slice_rows(r, p) : in, output_, out.slice_rows(r, p));
  }
}

void HeadModel::forward_blocks(std::span<const Entry> entries, int64_t piece) {
  int64_t M = 0;
  const std::vector<PagedRows> rows = paged_rows(entries, M);
  PagedBatchInputs inputs(rows);  // keeps a view of rows
  upload_pass(inputs, M);

  const int64_t d = info_.n_embd, V = info_.vocab_size;
  Device& dev = *device_;
  // u = [feature | embedding] rows [M, 2d]
  {
    std::vector<float> u(static_cast<size_t>(M) * 2 * d, 0.0f);
    int64_t row0 = 0;
    for (const Entry& e : entries)
      for (int32_t i = 0; i < e.m; ++i, ++row0)
        std::copy_n(e.features + i * d, d, u.data() + row0 * 2 * d);
    u_.upload(u.data(), u.size() * 4);
  }
  const View uu = u_.view(SPECD_DTYPE_F32, M, 2 * d);                // [M, 2d]
  const View uf = u_.view(SPECD_DTYPE_F32, M, d, 0, 2 * d * 4);      // [M, d] feature half
  const View ue = u_.view(SPECD_DTYPE_F32, M, d, d * 4, 2 * d * 4);  // [M, d] embedding half
  const View x = x_.view(SPECD_DTYPE_F32, M, d);                     // [M, d]
  const View h = h_.view(SPECD_DTYPE_F32, M, d);                     // [M, d]
  const View tokens = inputs.tokens(ints_);
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    dev.get_rows(tok_embd_, tokens.slice_cols(r, p), ue.slice_rows(r, p));
    if (info_.kind == HeadKind::kMtp) {
      dev.rms_norm(uf.slice_rows(r, p), hnorm_, info_.block.rms_eps, uf.slice_rows(r, p));
      dev.rms_norm(ue.slice_rows(r, p), enorm_, info_.block.rms_eps, ue.slice_rows(r, p));
      dev.matmul(uu.slice_rows(r, p), eh_, x.slice_rows(r, p));
    } else {
      dev.matmul(uu.slice_rows(r, p), fc_, x.slice_rows(r, p));
      broadcast(fc_bias_, h.slice_rows(r, p));
      dev.add(x.slice_rows(r, p), h.slice_rows(r, p), x.slice_rows(r, p));
    }
  }
  block_and_output(x, inputs, V, piece, nullptr);
  download_outputs(entries, V);
  inputs.finish();
}

void HeadModel::download_outputs(std::span<const Entry> entries, int64_t n_out) {
  const int64_t d = info_.n_embd;
  int64_t row0 = 0, logit0 = 0;
  for (const Entry& e : entries) {
    if (e.hidden)
      x_.download(e.hidden, static_cast<uint64_t>(e.m) * d * 4,
                  static_cast<uint64_t>(row0) * d * 4);
    const uint64_t rows = static_cast<uint64_t>(e.m - e.first_logit_row);
    const uint64_t count = rows * n_out;
    if (count) {
      logits_.download(e.logits, count * 4, static_cast<uint64_t>(logit0) * n_out * 4);
      check_finite(e.logits, count);
    }
    row0 += e.m;
    logit0 += static_cast<int64_t>(rows);
  }
}

void HeadModel::commit(KvCache& cache, std::span<const int32_t> kept) {
  check_cache(cache, "commit");
  cache.commit(kept);
}

void HeadModel::truncate(KvCache& cache, int32_t n) {
  check_cache(cache, "truncate");
  cache.truncate(n);
}

}  // namespace specd
