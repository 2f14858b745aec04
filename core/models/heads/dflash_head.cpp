// DFlash block drafters in llama.cpp's layout (general.architecture "dflash", tensor and key
// names of its src/llama-arch.cpp and src/models/dflash.cpp, written by its converter for a
// DFlashDraftModel): loading, binding to a target by shape and vocabulary, and the two passes.
//
//   encode (fusion): g = enc_norm(fc · [inputs of the target layers])            per token
//   inject:          every layer l writes K = rope(k_norm_l(wk_l g)), V = wv_l g at the
//                    token's position (no attention norm, nothing else runs)
//   block:           rows [root, mask, ..., mask] at positions n-1, n, ...: Qwen3 decoder
//                    layers (per-head q/k norms, NEOX rope) whose attention reads the injected
//                    rows and every row of the block, later ones too (non-causal); then the
//                    output norm and the target's LM head. Row i + 1 predicts token n + i.
#include <algorithm>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "models/architecture.hpp"
#include "models/heads/head_model.hpp"
#include "models/hyperparameters.hpp"
#include "models/paged_batch.hpp"
#include "models/weight_loader.hpp"

namespace specd {
namespace {

// DFlash's decoder layers: Qwen3's (per-head q/k RMS norms, NEOX rope pairing).
const Architecture kDflashLayer = {
    .name = "dflash",
    .rope_mode = SPECD_ROPE_NEOX,
    .qk_norm = Presence::kRequired,
};

}  // namespace

void HeadModel::load_dflash() {
  const GgufFile& f = head_file_;
  const GgufFile& t = target_file_;
  HeadInfo& in = info_;
  const std::string a = "dflash.";
  const BoundTarget bound = bind_by_shape(
      "the DFlash drafter", "a DFlash drafter needs " + a + "target_layers", "drafter");
  const std::string& both = bound.both;
  const int32_t n_tgt = bound.width, V = bound.vocab;
  in.draft_vocab = V;
  const int32_t d = positive_int_key(f, a + "embedding_length");
  if (d != n_tgt)
    throw UsageError("the DFlash drafter has width " + std::to_string(d) +
                     " and reads the target's embeddings and LM head, of width " +
                     std::to_string(n_tgt) + both);
  in.n_embd = d;
  in.input_dim = static_cast<int32_t>(in.target_layers.size()) * n_tgt;
  in.n_ctx = positive_int_key_or(f, a + "context_length",
                                 positive_int_key_or(t, bound.keys + "context_length", 2048));
  in.n_layers = positive_int_key(f, a + "block_count");
  if (in.n_layers > 64)
    throw Error(f.path() + ": " + a + "block_count " + std::to_string(in.n_layers) +
                " is more layers than a drafter has (at most 64)");
  in.block_size = positive_int_key_or(f, a + "block_size", 16);  // llama.cpp's default
  if (in.block_size < 2 || in.block_size > 64)
    throw Error(f.path() + ": " + a + "block_size must be in [2, 64], not " +
                std::to_string(in.block_size));
  const auto mask = f.get_u32_opt("tokenizer.ggml.mask_token_id");
  if (!mask)
    throw Error(f.path() +
                ": a DFlash drafter needs tokenizer.ggml.mask_token_id (the token "
                "its block is filled with)");
  if (*mask >= static_cast<uint32_t>(V))
    throw Error(f.path() + ": tokenizer.ggml.mask_token_id " + std::to_string(*mask) +
                " is outside the target's vocabulary of " + std::to_string(V));
  in.mask_token = static_cast<int32_t>(*mask);

  read_block_shape(a, d, 1e-6f);
  BlockShape& s = in.block;
  if (auto v = f.get_u32_opt(a + "attention.value_length");
      v && static_cast<int32_t>(*v) != s.head_dim)
    throw Error(f.path() + ": value_length " + std::to_string(*v) + " differs from key_length " +
                std::to_string(s.head_dim) + " (not supported)");
  s.rope_mode = SPECD_ROPE_NEOX;
  if (f.has(a + "attention.sliding_window"))
    throw Error(f.path() + ": sliding-window DFlash layers are not supported");

  WeightLoader load(f, *device_, buffers_);
  WeightLoader from_target(t, *device_, buffers_);
  fc3_ = load.matrix("fc.weight", in.input_dim, d);  // [d, input_dim]
  enc_norm_ = load.vector("enc.output_norm.weight", d);
  output_norm_ = load.vector("output_norm.weight", d);
  for (int32_t l = 0; l < in.n_layers; ++l)
    layers_.push_back(std::make_unique<DecoderBlock>(
        *device_, s, load_block(load, "blk." + std::to_string(l) + ".", s, kDflashLayer)));
  const bool own_output = f.tensor("output.weight") != nullptr;
  output_ = own_output                  ? load.matrix("output.weight", d, V)
            : t.tensor("output.weight") ? from_target.matrix("output.weight", d, V)
                                        : from_target.matrix("token_embd.weight", d, V);
  tok_embd_ = f.tensor("token_embd.weight") ? load.matrix("token_embd.weight", d, V)
                                            : from_target.matrix("token_embd.weight", d, V);
  load.refuse_unread("a " + std::to_string(in.n_layers) + "-layer DFlash drafter");
}

void HeadModel::forward_dflash(std::span<const Entry> entries, int64_t piece) {
  // One kind of element per call: fused features to inject, or block rows.
  const bool inject = entries.front().features != nullptr;
  for (const Entry& e : entries) {
    if (!e.cache) throw Error("forward: dflash needs its cache");
    check_cache(*e.cache, "forward");
    if ((e.features != nullptr) != inject)
      throw Error("forward: a DFlash call injects features or runs block rows, not both");
    if (inject ? !e.tokens.empty() : e.tokens.size() != static_cast<size_t>(e.m))
      throw Error(inject ? "forward: DFlash features come without tokens"
                         : "forward: DFlash block rows need one token each");
    if (e.positions.size() != static_cast<size_t>(e.m) ||
        e.parents.size() != static_cast<size_t>(e.m))
      throw Error("forward: positions and parents need one entry per row");
    for (int32_t i = 0; i < e.m; ++i) {
      if (e.positions[i] < 0) throw Error("forward: negative position at row " + std::to_string(i));
      if (!inject && (e.tokens[i] < 0 || e.tokens[i] >= info_.vocab_size))
        throw Error("forward: token " + std::to_string(e.tokens[i]) + " is outside the vocabulary");
    }
    if (!inject && !e.logits) throw Error("forward: DFlash block rows need logits");
  }
  int64_t M = 0;
  std::vector<PagedRows> rows(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    // Injected rows carry no token: their positions fill the (unread) token slots.
    rows[i] = {e.cache, inject ? e.positions : e.tokens, e.positions, e.parents, true, !inject};
    M += e.m;
  }
  PagedBatchInputs inputs(rows);
  upload_pass(inputs, M);
  block_scratch_.ensure(*device_, info_.block, M);
  const int64_t d = info_.n_embd, V = info_.vocab_size;
  Device& dev = *device_;
  const View x = x_.view(SPECD_DTYPE_F32, M, d);
  const PagedBatch b = inputs.views(ints_);
  if (inject) {
    int64_t row0 = 0;
    for (const Entry& e : entries) {
      x_.upload(e.features, static_cast<uint64_t>(e.m) * d * 4,
                static_cast<uint64_t>(row0) * d * 4);
      row0 += e.m;
    }
    for (size_t l = 0; l < layers_.size(); ++l)
      layers_[l]->write_kv(x, b, kv_pool_->k(static_cast<int32_t>(l)),
                           kv_pool_->v(static_cast<int32_t>(l)), piece, block_scratch_);
    inputs.finish();
    return;
  }
  const View tokens = inputs.tokens(ints_);
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    dev.get_rows(tok_embd_, tokens.slice_cols(r, p), x.slice_rows(r, p));
  }
  for (size_t l = 0; l < layers_.size(); ++l)
    layers_[l]->run(x, b, kv_pool_->k(static_cast<int32_t>(l)),
                    kv_pool_->v(static_cast<int32_t>(l)), piece, block_scratch_);
  output_logits(x, V, piece, &output_norm_);
  download_outputs(entries, V);
  inputs.finish();
}

}  // namespace specd
