// LlamaModel::forward_batch: the rows of one or several sequences in one pass over paged KV
// caches (forward() is a batch of one).
#include <algorithm>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "models/llama_model.hpp"
#include "models/paged_batch.hpp"

namespace specd {

void LlamaModel::forward_batch(std::span<const ForwardEntry> entries) {
  if (entries.empty()) throw Error("forward_batch: no entries");
  const ModelInfo& in = info_;
  const size_t n = entries.size();
  std::vector<PagedRows> rows(n);
  int32_t M = 0, logit_rows = 0;
  for (size_t e = 0; e < n; ++e) {
    const ForwardEntry& en = entries[e];
    if (!en.cache) throw Error("forward_batch: entry " + std::to_string(e) + " has no cache");
    check_entry(*en.cache, en.tokens, en.positions, en.parents, en.logits, en.first_logit_row);
    rows[e] = {en.cache, en.tokens, en.positions, en.parents, false};
    rows[e].keep_states_from = en.first_logit_row;  // a commit ends at a row with logits
    M += static_cast<int32_t>(en.tokens.size());
    logit_rows += static_cast<int32_t>(en.tokens.size()) - en.first_logit_row;
  }
  // Rows of several sequences go through the row-wise ops in pieces the device computes row
  // by row invariantly; one sequence's rows in one piece (a long prefill may then take the
  // device's faster path for many rows).
  const int64_t invariant = std::max<uint32_t>(device_->info().invariant_max_rows, 1);
  const int64_t piece = n == 1 ? std::max<int64_t>(invariant, M) : invariant;

  // One upload of every int32 input: the pass's (paged_batch.hpp), then the rows whose
  // logits are wanted [L].
  PagedBatchInputs inputs(rows);
  std::vector<int32_t> ints = inputs.ints();
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
  s_.ints.upload(ints.data(), ints.size() * 4);
  const PagedBatch batch = inputs.views(s_.ints);
  const PagedBatch sliding = kv_pool_->window() ? batch.sliding() : batch;

  const int64_t d = in.n_embd;
  const View x = s_.x.view(SPECD_DTYPE_F32, M, d);  // residual stream of every entry [M, d]
  Device& dev = *device_;
  const View tokens = inputs.tokens(s_.ints);
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min<int64_t>(piece, M - r);
    dev.get_rows(tok_embd_, tokens.slice_cols(r, p), x.slice_rows(r, p));
  }
  const bool any_hidden =
      std::any_of(entries.begin(), entries.end(), [](const ForwardEntry& e) { return e.hidden; });
  const std::vector<int32_t> last{in.n_layer};
  const std::vector<int32_t>& feature_at = feature_layers_.empty() ? last : feature_layers_;
  const int64_t width = static_cast<int64_t>(feature_at.size()) * d;
  // The residual stream entering `layer` (n_layer: the last hidden state) into column block
  // `slot` of every entry's hidden rows, for each slot that asks for that layer.
  auto take_features = [&](int32_t layer) {
    if (!any_hidden || std::find(feature_at.begin(), feature_at.end(), layer) == feature_at.end())
      return;
    if (feature_at.size() == 1) {  // straight into each entry's rows
      int64_t row0 = 0;
      for (const ForwardEntry& en : entries) {
        const int64_t m = static_cast<int64_t>(en.tokens.size());
        if (en.hidden)
          s_.x.download(en.hidden, static_cast<uint64_t>(m) * d * 4,
                        static_cast<uint64_t>(row0) * d * 4);
        row0 += m;
      }
      return;
    }
    feature_rows_.resize(static_cast<size_t>(M) * d);
    s_.x.download(feature_rows_.data(), static_cast<uint64_t>(M) * d * 4);
    for (size_t slot = 0; slot < feature_at.size(); ++slot) {
      if (feature_at[slot] != layer) continue;
      int64_t row0 = 0;
      for (const ForwardEntry& en : entries) {
        const int64_t m = static_cast<int64_t>(en.tokens.size());
        for (int64_t i = 0; en.hidden && i < m; ++i)
          std::copy_n(feature_rows_.data() + (row0 + i) * d, d,
                      en.hidden + i * width + static_cast<int64_t>(slot) * d);
        row0 += m;
      }
    }
  };
  KvPool& pool = *kv_pool_;
  for (int32_t l = 0; l < in.n_layer; ++l) {
    take_features(l);
    const int32_t at = kv_index_[static_cast<size_t>(l)];
    if (layers_[l].weights().recurrent())
      layers_[l].run_delta(x, batch, delta_state(at, 0, static_cast<int32_t>(inputs.replay_rows())),
                           piece, s_.block);
    else if (layers_[l].shape().window > 0)
      layers_[l].run(x, sliding, pool.window()->k(at), pool.window()->v(at), piece, s_.block);
    else
      layers_[l].run(x, batch, pool.k(at), pool.v(at), piece, s_.block);
  }
  take_features(in.n_layer);
  if (logit_rows > 0) {
    // The rows whose logits are wanted, gathered (verbatim) into one block, then the final
    // norm and the output projection piece by piece.
    const View packed = s_.packed.view(SPECD_DTYPE_F32, logit_rows, d);
    const View wanted = s_.ints.view(SPECD_DTYPE_I32, 1, logit_rows, logit_at * 4);
    dev.copy_rows(x, wanted, packed);
    const View h = s_.block.h.view(SPECD_DTYPE_F32, logit_rows, d);
    const View out = s_.logits.view(SPECD_DTYPE_F32, logit_rows, in.vocab_size);
    const int64_t out_piece = n == 1 ? std::max<int64_t>(invariant, logit_rows) : invariant;
    for (int64_t r = 0; r < logit_rows; r += out_piece) {
      const int64_t p = std::min<int64_t>(out_piece, logit_rows - r);
      dev.rms_norm(packed.slice_rows(r, p), output_norm_, in.rms_eps, h.slice_rows(r, p));
      dev.matmul(h.slice_rows(r, p), output_, out.slice_rows(r, p));
    }
    uint64_t at = 0;
    for (const ForwardEntry& en : entries) {
      const uint64_t r = static_cast<uint64_t>(en.tokens.size() - en.first_logit_row);
      if (r == 0) continue;
      s_.logits.download(en.logits, r * in.vocab_size * 4, at * in.vocab_size * 4);
      at += r;
    }
  }
  inputs.finish();
}

}  // namespace specd
