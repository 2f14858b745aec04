// HeadModel's forward passes (Medusa; EAGLE and MTP over their own KV cache) and cache
// bookkeeping. Formulas: train/FORMATS.md, sections 4-6.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "models/batch_mask.hpp"
#include "models/heads/head_model.hpp"
#include "models/kv_layout.hpp"

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

void HeadModel::forward(HeadCache* cache, const float* features, std::span<const int32_t> tokens,
                        std::span<const int32_t> positions, std::span<const int32_t> parents,
                        float* logits, float* hidden) {
  if (info_.kind == HeadKind::kMedusa) {
    if (cache || hidden) throw Error("forward: a Medusa head takes no cache and gives no features");
    if (tokens.empty()) throw Error("forward: no rows");
    forward_medusa(features, static_cast<int64_t>(tokens.size()), logits);
    return;
  }
  if (!cache) throw Error("forward: " + info_.architecture + " needs its cache");
  forward_block(*cache, features, tokens, positions, parents, logits, hidden);
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

void HeadModel::forward_medusa(const float* features, int64_t m, float* logits) {
  ensure_scratch(m);
  const int64_t d = info_.n_embd, V = info_.vocab_size, K = info_.n_heads;
  Device& dev = *device_;
  x_.upload(features, static_cast<uint64_t>(m * d) * 4);
  const View x = x_.view(SPECD_DTYPE_F32, m, d);        // hidden_t [m, d], then bias rows
  const View z = h_.view(SPECD_DTYPE_F32, m, d);        // z_t [m, d]
  const View t = t_.view(SPECD_DTYPE_F32, m, d);        // r_{N,t} [m, d]
  const View ones = ones_.view(SPECD_DTYPE_F32, m, d);  // [m, d]
  dev.rms_norm(x, output_norm_, target_eps_, z);
  for (int64_t n = 0; n < K; ++n) {
    const MedusaHead& head = medusa_[n];
    dev.matmul(z, head.fc, t);
    broadcast(head.bias, x);
    dev.add(t, x, t);
    dev.swiglu(t, ones, t);  // silu
    dev.add(t, z, t);
    const View out = logits_.view(SPECD_DTYPE_F32, m, V, static_cast<uint64_t>(n * V) * 4,
                                  K * V * 4);  // logits[:, n, :] of [m, K, V]
    dev.matmul(t, output_, out);
  }
  logits_.download(logits, static_cast<uint64_t>(m * K * V) * 4);
  check_finite(logits, static_cast<size_t>(m * K * V));
}

void HeadModel::forward_block(HeadCache& cache, const float* features,
                              std::span<const int32_t> tokens, std::span<const int32_t> positions,
                              std::span<const int32_t> parents, float* logits, float* hidden) {
  const int32_t m = static_cast<int32_t>(tokens.size());
  const int32_t p0 = cache.pending();
  if (m == 0) throw Error("forward: no rows");
  if (positions.size() != tokens.size() || parents.size() != tokens.size())
    throw Error("forward: tokens, positions and parents differ in length");
  if (cache.size() + p0 + m > cache.capacity())
    throw Error("forward: " + std::to_string(cache.size() + p0) + " cached + " + std::to_string(m) +
                " new elements exceed the head cache capacity " + std::to_string(cache.capacity()));
  for (int32_t i = 0; i < m; ++i) {
    if (tokens[i] < 0 || tokens[i] >= info_.vocab_size)
      throw Error("forward: token " + std::to_string(tokens[i]) + " is outside the vocabulary");
    if (positions[i] < 0) throw Error("forward: negative position at row " + std::to_string(i));
  }
  std::vector<int32_t> all = cache.parents_;
  all.insert(all.end(), parents.begin(), parents.end());
  const BatchMask mask = build_batch_mask(cache.size(), all);

  // int32 inputs: tokens, positions, prefix_len, extra_begin (rebased), extra_slots.
  const int32_t e0 = mask.extra_begin[p0];
  std::vector<int32_t> ints(tokens.begin(), tokens.end());
  ints.insert(ints.end(), positions.begin(), positions.end());
  ints.insert(ints.end(), mask.prefix_len.begin() + p0, mask.prefix_len.end());
  for (int32_t i = 0; i <= m; ++i) ints.push_back(mask.extra_begin[p0 + i] - e0);
  ints.insert(ints.end(), mask.extra_slots.begin() + e0, mask.extra_slots.end());
  const int64_t n_extra = static_cast<int64_t>(mask.extra_slots.size()) - e0;
  if (!ints_ || ints_.size() < ints.size() * 4) ints_ = device_->alloc(ints.size() * 4 * 2);
  ints_.upload(ints.data(), ints.size() * 4);
  ensure_scratch(m);

  const int64_t d = info_.n_embd, V = info_.vocab_size;
  Device& dev = *device_;
  // u = [feature | embedding] rows [m, 2d]
  std::vector<float> u(static_cast<size_t>(m) * 2 * d, 0.0f);
  for (int32_t i = 0; i < m; ++i) std::copy_n(features + i * d, d, u.data() + i * 2 * d);
  u_.upload(u.data(), u.size() * 4);
  const View uu = u_.view(SPECD_DTYPE_F32, m, 2 * d);                // [m, 2d]
  const View uf = u_.view(SPECD_DTYPE_F32, m, d, 0, 2 * d * 4);      // [m, d] feature half
  const View ue = u_.view(SPECD_DTYPE_F32, m, d, d * 4, 2 * d * 4);  // [m, d] embedding half
  const View x = x_.view(SPECD_DTYPE_F32, m, d);                     // [m, d]
  const View h = h_.view(SPECD_DTYPE_F32, m, d);                     // [m, d]
  dev.get_rows(tok_embd_, ints_.view(SPECD_DTYPE_I32, 1, m, 0), ue);
  if (info_.kind == HeadKind::kMtp) {
    dev.rms_norm(uf, hnorm_, info_.block.rms_eps, uf);
    dev.rms_norm(ue, enorm_, info_.block.rms_eps, ue);
    dev.matmul(uu, eh_, x);
  } else {
    dev.matmul(uu, fc_, x);
    broadcast(fc_bias_, h);
    dev.add(x, h, x);
  }
  const View extra = ints_.view(SPECD_DTYPE_I32, 1, n_extra ? n_extra : 1, 16ull * m + 4);
  BlockBatch batch;
  const int64_t kvd = info_.block.kv_dim();
  batch.k_cache = kv_rows(cache.k_, cache.capacity(), kvd);  // [cap, Hkv*hd]
  batch.v_cache = kv_rows(cache.v_, cache.capacity(), kvd);  // [cap, Hkv*hd]
  batch.first_row = cache.size() + p0;
  batch.positions = ints_.view(SPECD_DTYPE_I32, 1, m, 4ull * m);
  batch.prefix_len = ints_.view(SPECD_DTYPE_I32, 1, m, 8ull * m);
  batch.extra_begin = ints_.view(SPECD_DTYPE_I32, 1, m + 1, 12ull * m);
  batch.extra_slots = n_extra ? &extra : nullptr;
  block_scratch_.ensure(*device_, info_.block, m);
  block_->run(x, batch, block_scratch_);
  if (hidden) x_.download(hidden, static_cast<uint64_t>(m) * d * 4);
  dev.rms_norm(x, output_norm_, target_eps_, h);
  const View out = logits_.view(SPECD_DTYPE_F32, m, V);  // [m, V]
  dev.matmul(h, output_, out);
  logits_.download(logits, static_cast<uint64_t>(m) * V * 4);
  check_finite(logits, static_cast<size_t>(m) * V);
  cache.parents_ = std::move(all);
}

void HeadModel::commit(HeadCache& cache, std::span<const int32_t> kept) {
  const int32_t k = static_cast<int32_t>(kept.size());
  for (int32_t j = 0; j < k; ++j) {
    const int32_t r = kept[j];
    if (r < 0 || r >= cache.pending())
      throw Error("commit: element " + std::to_string(r) + " is not pending (there are " +
                  std::to_string(cache.pending()) + ")");
    if (cache.parents_[r] != (j == 0 ? -1 : kept[j - 1]))
      throw Error("commit: element " + std::to_string(r) + " does not continue the kept path");
  }
  bool identity = true;
  for (int32_t j = 0; j < k; ++j) identity = identity && kept[j] == j;
  if (!identity) {
    std::vector<int32_t> idx(k);
    for (int32_t j = 0; j < k; ++j) idx[j] = cache.size() + kept[j];
    cache.index_.upload(idx.data(), idx.size() * 4);
    const View vi = cache.index_.view(SPECD_DTYPE_I32, 1, k);
    for (Buffer* b : {&cache.k_, &cache.v_}) {
      const View all = kv_rows(*b, cache.capacity(), info_.block.kv_dim());
      device_->copy_rows(all, vi, all.slice_rows(cache.size(), k));
    }
  }
  device_->synchronize();
  cache.committed_ += k;
  cache.parents_.clear();
}

void HeadModel::truncate(HeadCache& cache, int32_t n) {
  if (n < 0 || n > cache.size())
    throw Error("truncate: " + std::to_string(n) + " is outside [0, " +
                std::to_string(cache.size()) + "]");
  cache.committed_ = n;
  cache.parents_.clear();
}

}  // namespace specd
