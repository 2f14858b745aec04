// A model of the llama family, written once over the backend ops: RMSNorm, RoPE, grouped-query
// attention, SwiGLU. Every supported GGUF architecture (models/architecture.hpp: llama,
// qwen2, qwen3, phi3, qwen35) loads through it; what differs between them (metadata prefix, RoPE
// pairing, optional tensors and steps) comes from its Architecture.
//
// Typical use by the engine:
//   auto model = LlamaModel::load("models/target.gguf", device);
//   auto cache = model->new_cache(model->info().n_ctx);
//   // prompt (all but its last token): one chain, then commit every row
//   model->forward(*cache, prompt, positions, chain_parents, logits);
//   model->commit(*cache, all_rows);
//   // each round: [root, draft nodes...]; keep the accepted path
//   model->forward(*cache, round_tokens, round_positions, round_parents, logits);
//   model->commit(*cache, accepted_rows);
//
// KV caches are block tables into one pool per model (kv_pool.hpp, kv_cache.hpp): a cache
// never copies its rows to grow, and the rows of every sequence of a batched pass are read
// by one attention call per layer.
//
// Batch invariance: for m <= the device's invariant_max_rows (64 on the CPU), each row's
// logits are bit-identical to running its path one token at a time; larger m (prefill) may
// round differently. Thread rule: a model may serve several caches but is used by one
// thread at a time, like its device. The device must outlive the model and its caches.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.hpp"
#include "gguf/gguf_reader.hpp"
#include "models/decoder_block.hpp"
#include "models/kv_cache.hpp"
#include "models/model_info.hpp"

namespace specd {

// Whether tensor `name` belongs to a layer at or after `n_trunk` ("blk.<N>." with N >= n_trunk):
// a hybrid model file's MTP layers.
bool is_mtp_tensor(std::string_view name, int32_t n_trunk);

// One sequence's part of a batched forward (LlamaModel::forward_batch): the arguments of
// forward() for its own cache. The spans and pointers are borrowed for the call.
struct ForwardEntry {
  KvCache* cache = nullptr;
  std::span<const int32_t> tokens, positions, parents;
  float* logits = nullptr;  // [(m - first_logit_row) x vocab_size]
  float* hidden = nullptr;  // [m x feature_dim()] when not null
  int32_t first_logit_row = 0;
};

class LlamaModel {
 public:
  // Reads and checks the GGUF file (architecture, hyperparameters, every tensor's presence,
  // type and shape) and puts the weights on `device`. Throws specd::Error naming the file
  // and, where it applies, the tensor.
  static std::unique_ptr<LlamaModel> load(const std::string& gguf_path, Device& device);
  // The same from a file already opened (and parsed) by the caller, e.g. for its tokenizer:
  // a file is parsed once.
  static std::unique_ptr<LlamaModel> load(GgufFile file, Device& device);
  ~LlamaModel();

  const ModelInfo& info() const { return info_; }
  const GgufFile& file() const { return file_; }
  Device& device() const { return *device_; }

  // A cache for up to max_tokens rows (committed plus pending) in this model's KV pool.
  // The pool is sized to hold every live cache's capacity (blocks are taken as rows are
  // written, so memory is touched as sequences grow).
  std::unique_ptr<KvCache> new_cache(int32_t max_tokens);
  // Grows the KV pool to hold at least `rows` rows in all (it never shrinks).
  void reserve_kv(int64_t rows);
  // The KV pool (created on first use); for its gauges.
  KvPool& kv_pool();
  // The dtype of the KV cache rows (f32, f16 or q8_0; default f32), set before the first cache
  // is made. Throws Error after, and for q8_0 when a row is not whole 32-value blocks.
  void set_kv_dtype(specd_dtype dtype);
  // Rows per KV block.
  static constexpr int32_t kKvBlockRows = 16;

  // The features forward writes to `hidden`: for each listed layer L in order, the residual
  // stream entering layer L (L = n_layer: the last hidden state before the final norm),
  // concatenated, [m x layers.size() * n_embd]. Empty = {n_layer}, the default. EAGLE-3
  // heads take the inputs of a low, a middle and a high layer (llama.cpp's target_layers).
  // Throws UsageError naming the model when a layer is outside [0, n_layer].
  void set_feature_layers(std::vector<int32_t> layers);
  const std::vector<int32_t>& feature_layers() const { return feature_layers_; }
  int32_t feature_dim() const;

  // Runs m = tokens.size() tokens. Row i is at position positions[i] and attends to the
  // committed prefix (cache.size() rows) plus its ancestors within this batch:
  // parents[i] = index of its parent row in the batch, or -1 when its parent is the last
  // committed row (a chain is parents[i] = i - 1, parents[0] = -1). Their KV rows are written
  // after the committed prefix and stay pending until commit (a new forward replaces them).
  // Writes logits (host memory) for rows [first_logit_row, m) only, as
  // [(m - first_logit_row) x vocab_size]: the final norm and the output matmul run on those
  // rows alone, so a prefill that needs no logits (first_logit_row = m; logits may then be
  // null) or only its last row's costs no [m x vocab] buffer on device or host. If
  // hidden != nullptr, also the rows' features [m x feature_dim()]: the last hidden state
  // before the final norm, or what set_feature_layers chose.
  void forward(KvCache& cache, std::span<const int32_t> tokens, std::span<const int32_t> positions,
               std::span<const int32_t> parents, float* logits, float* hidden = nullptr,
               int32_t first_logit_row = 0);

  // forward() for several sequences in one pass, each over its own cache (no two entries
  // may share a cache). The rows of all entries go through the row-wise ops together, in
  // pieces of at most the device's invariant_max_rows rows, so the weights are read once
  // per piece rather than once per sequence; attention runs once per layer over every row,
  // each through its own cache's blocks and mask. Batch invariance: for an entry of m <=
  // invariant_max_rows rows, its logits and hidden rows are bit-identical to forward() of
  // that entry alone, whatever the other entries are (prefill is therefore given in chunks
  // of at most that many rows). forward() is this with one entry, whose rows then go
  // through the row-wise ops in one piece however many there are.
  void forward_batch(std::span<const ForwardEntry> entries);

  // Keeps the pending rows listed (batch indices, in order, each the child of the previous,
  // the first a child of the prefix) and drops the other pending rows; the kept rows become
  // committed, in that order. An empty list just drops the pending rows. A hybrid model's
  // commit that ends before a chain's last row runs the path's rows through its recurrent
  // layers again, from the committed state (replay, recurrent_pool.hpp): commit a pass's
  // rows before the next pass.
  void commit(KvCache& cache, std::span<const int32_t> kept_rows);
  // How a hybrid model restores a recurrent state after a commit that drops rows (default
  // replay; $SPECD_RECURRENT_RESTORE=snapshot keeps a state per row instead). Set before the
  // first cache is made.
  void set_recurrent_restore(RecurrentRestore restore);
  // A hybrid model's recent replay: the median seconds of the last few commits that ran rows
  // again (0 before any); what a rejected draft costs beyond its pass.
  double replay_seconds() const;
  // A mixture of experts: the experts its passes have run so far, summed over layers and
  // pieces (a pass reads those experts' matrices: what verifying more rows costs it); 0 for a
  // dense model.
  int64_t experts_run() const { return s_.block.moe.experts_run; }

  // Keeps the first n_committed committed rows (n_committed <= cache.size()); drops pending.
  void truncate(KvCache& cache, int32_t n_committed);

 private:
  struct Scratch {
    int32_t rows = 0;
    int32_t logit_rows = 0;  // rows the logits and packed buffers hold
    Buffer x, logits, ints;
    Buffer packed;       // the rows whose logits are wanted, gathered
    BlockScratch block;  // shared by the layers; its h also holds the final norm
  };

  LlamaModel(GgufFile file, Device& device);
  void read_hyperparameters();
  // A mixture of experts' counts and sizes; refuses expert counts where the architecture has none.
  void read_expert_hyperparameters();
  void read_hybrid_hyperparameters();
  void load_weights();
  void ensure_scratch(int32_t m, int32_t logit_rows, size_t n_ints);
  void check_entry(const KvCache& cache, std::span<const int32_t> tokens,
                   std::span<const int32_t> positions, std::span<const int32_t> parents,
                   const float* logits, int32_t first_logit_row) const;
  void check_cache(const KvCache& cache, const char* op) const;
  // Recurrent layer `at`'s state, with its replay store rows [first, first + rows).
  DecoderBlock::DeltaState delta_state(int32_t at, int32_t first, int32_t rows) const;
  // Runs the first `rows` stored rows of the cache's last pass again from its committed state.
  void replay(KvCache& cache, int32_t rows);

  GgufFile file_;  // keeps the mapping alive: weights may refer to it
  Device* device_;
  const Architecture* arch_ = nullptr;
  ModelInfo info_;
  std::vector<Buffer> buffers_;  // weights (and converted norm vectors)
  View tok_embd_, output_norm_, output_;
  std::vector<DecoderBlock> layers_;
  std::shared_ptr<KvPool> kv_pool_;
  std::vector<int32_t> kv_index_;  // per layer: its KV pool layer, or its recurrent pool layer
  RecurrentRestore restore_ = RecurrentRestore::kReplay;
  Buffer replay_ints_;                // a replay's state_in and state_out
  std::vector<double> replay_times_;  // the last replays' seconds, oldest first
  specd_dtype kv_dtype_ = SPECD_DTYPE_F32;
  std::vector<int32_t> feature_layers_;  // empty = the last hidden state
  std::vector<float> feature_rows_;      // one layer's residual stream, for hidden
  Scratch s_;
};

}  // namespace specd
