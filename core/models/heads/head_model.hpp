// Draft heads bound to a target (train/FORMATS.md, sections 3-6), written once over the
// backend ops: Medusa-1 (K residual heads on the normed last hidden state), EAGLE-1 (a
// fusion projection and one decoder block over target features) and DeepSeek-V3 style MTP
// (normed hidden and embedding, a projection and one decoder block). All use the target's
// token_embd, output_norm and output (LM head), read from the target file.
// EAGLE-3 heads come in llama.cpp's layout (general.architecture "eagle3", as its
// convert_hf_to_gguf.py writes them; eagle3_head.cpp): their features are the inputs of a few
// target layers, fused by encode() into the head's width before forward. DFlash block
// drafters (general.architecture "dflash", dflash_head.cpp) fuse the same kind of features
// into K/V rows of each of their layers, and draft a whole block in one pass. The MTP layer of
// a qwen35 file (blk.N.nextn.*, llama.cpp's layout; nextn_head.cpp) drafts as a head too:
// architecture "nextn", its features the target's hidden states after output_norm (encode).
//
// Feature rows given to forward are the target's hidden_t (BEFORE output_norm), as the
// engine hands them to proposers; Medusa applies the target's output_norm itself.
//
// Thread rule: used by one thread at a time, like its device. The device must outlive the
// model and its caches.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "gguf/gguf_reader.hpp"
#include "models/decoder_block.hpp"
#include "models/kv_cache.hpp"
#include "models/paged_batch.hpp"

namespace specd {

enum class HeadKind { kMedusa, kEagle, kMtp, kEagle3, kDflash, kNextn };

struct HeadInfo {
  std::string name;          // general.name of the head
  std::string path;          // the head file
  std::string architecture;  // specd-medusa | specd-eagle | specd-mtp
  HeadKind kind = HeadKind::kMedusa;
  std::string target_name;     // specd.target.name
  int32_t n_embd = 0;          // d, equal to the target's
  int32_t vocab_size = 0;      // V, the target's LM head rows
  int32_t n_ctx = 0;           // trained context (EAGLE, MTP); the target's for Medusa
  int32_t n_heads = 1;         // Medusa's K; 1 otherwise
  int32_t predict_offset = 2;  // MTP: the module predicts token t + predict_offset
  BlockShape block;            // EAGLE, MTP, EAGLE-3
  // EAGLE-3: the target layers whose inputs are its features, their fused width (input_dim;
  // n_embd for the others), the rows of its own output (draft_vocab; vocab_size otherwise).
  std::vector<int32_t> target_layers;
  int32_t input_dim = 0;
  int32_t draft_vocab = 0;
  bool norm_before_residual = false;  // eagle3.norm_before_residual
  // DFlash: its decoder layers, the rows of one block pass (the root and block_size - 1
  // masks) and the mask token's id.
  int32_t n_layers = 1;
  int32_t block_size = 0;
  int32_t mask_token = -1;
};

// The target layers a head file asks for as features (<arch>.target_layers of an EAGLE-3
// file), empty for a head on the last hidden state. Throws Error naming the file when the
// key is malformed.
std::vector<int32_t> head_target_layers(const GgufFile& head);

class HeadModel {
 public:
  // Loads the head at `head_path` and the parts of the target at `target_path` it uses,
  // after checking that the head is bound to that target (UsageError naming both when
  // not). Throws specd::Error naming the file (and tensor) on any other problem.
  static std::unique_ptr<HeadModel> load(const std::string& head_path,
                                         const std::string& target_path, Device& device);
  ~HeadModel();

  const HeadInfo& info() const { return info_; }
  bool has_cache() const { return info_.kind != HeadKind::kMedusa; }

  // A cache for up to max_rows elements (EAGLE, MTP only), in the head's KV pool.
  std::unique_ptr<KvCache> new_cache(int32_t max_rows);
  // The dtype of its KV rows (f32, f16 or q8_0), set before the first cache is made.
  void set_kv_dtype(specd_dtype dtype);

  // Medusa: `cache` is null, tokens/positions/parents unused; row i of `features` [m, d]
  // gives logits[i, N, :] for heads N = 0..K-1 ([m, K, V]); `hidden` must be null.
  // EAGLE/MTP: element i is (features[i], tokens[i]) at RoPE position positions[i]; its
  // parent is parents[i]: -1 for the last committed element, else an index into the
  // pending elements (those of earlier forward calls since the last commit first, then
  // this call's). Writes logits [m, V] and, when not null, the output features [m, d].
  // DFlash (through forward_batch: forward() takes block rows only): an element with
  // features and no tokens is a fused target feature (encode) at
  // `positions[i]`, whose K and V rows every layer writes (k_norm(wk g) at its RoPE position,
  // wv g); an element with tokens and no features is a block row (the root, then masks) at
  // its position, attending to the committed rows and to every row of its call; logits as
  // EAGLE's. Both kinds stay pending until commit or truncate.
  void forward(KvCache* cache, const float* features, std::span<const int32_t> tokens,
               std::span<const int32_t> positions, std::span<const int32_t> parents, float* logits,
               float* hidden);

  // One sequence's rows in forward_batch: forward()'s arguments (m = features rows; tokens,
  // positions and parents are empty for Medusa).
  struct Entry {
    KvCache* cache = nullptr;
    const float* features = nullptr;
    int32_t m = 0;
    std::span<const int32_t> tokens, positions, parents;
    float* logits = nullptr;  // [m - first_logit_row, n_out]
    float* hidden = nullptr;
    // Logits for rows [first_logit_row, m) only (not Medusa): a catch-up's rows before its
    // last need none, and the LM head is the dearest part of a head's pass.
    int32_t first_logit_row = 0;
  };
  // forward() for several sequences in one pass (no two entries share a cache): the rows go
  // through the row-wise ops together in pieces of at most the device's invariant_max_rows,
  // and (EAGLE, MTP) attention runs once over every row through each cache's blocks. An entry
  // of m <= invariant_max_rows rows gets the bits forward() of it alone gives.
  void forward_batch(std::span<const Entry> entries);

  // EAGLE-3: fuses m rows of target features [m, input_dim] into the head's features
  // [m, n_embd] (its fc projection), which forward then takes; DFlash: its fc projection and
  // encoder norm; nextn: the target's output_norm. Other heads: throws.
  void encode(const float* target_features, int32_t m, float* features);

  // Keeps the pending elements listed (in order, each the child of the previous, the first
  // a child of the committed prefix), drops the others.
  void commit(KvCache& cache, std::span<const int32_t> kept);
  // Keeps the first n committed elements; drops pending ones.
  void truncate(KvCache& cache, int32_t n);
  static constexpr int32_t kKvBlockRows = 16;

 private:
  struct MedusaHead {
    View fc, bias;  // [d, d], [1, d]
  };
  HeadModel(GgufFile head, GgufFile target, Device& device);
  void load_target();
  void load_head();
  // EAGLE-3 and DFlash (llama.cpp's layouts, which name no target) are bound by shape
  // (eagle3_head.cpp): the target's width, its vocabulary (the file's tokens must be its),
  // and that each of the file's target layers exists. `what` names the file in messages
  // ("the EAGLE-3 head"), `needs_layers` says what it lacks without target layers, `role`
  // names it beside the target ("head"). Sets name, target_name, vocab_size, target_layers.
  struct BoundTarget {
    int32_t width = 0, vocab = 0;
    std::string keys;  // the target's key prefix, "<architecture>."
    std::string both;  // " (<role> <file>, target <file>)", appended to messages
  };
  BoundTarget bind_by_shape(const std::string& what, const std::string& needs_layers,
                            const std::string& role);
  // Their attention block's shape from the `a`-prefixed keys for width d (rms eps `eps`
  // when the file gives none) into info_.block.
  // `experts`: the layer's FFN is a mixture of experts (feed_forward_length may be absent).
  void read_block_shape(const std::string& a, int32_t d, float eps, bool experts = false);
  void load_eagle3();  // eagle3_head.cpp: the head and what it takes from the target
  void load_dflash();  // dflash_head.cpp
  void load_nextn();   // nextn_head.cpp
  void forward_nextn(std::span<const Entry> entries, int64_t piece);
  void forward_dflash(std::span<const Entry> entries, int64_t piece);
  void forward_eagle3(std::span<const Entry> entries, int64_t piece);
  void forward_medusa(std::span<const Entry> entries, int64_t piece);
  // Throws naming the file when any of the n logits is NaN or infinite.
  void check_finite(const float* logits, size_t n) const;
  void forward_blocks(std::span<const Entry> entries, int64_t piece);
  // A block pass's rows (M: their count) and their upload, with scratch for M rows.
  static std::vector<PagedRows> paged_rows(std::span<const Entry> entries, int64_t& M);
  void upload_pass(const PagedBatchInputs& inputs, int64_t M);
  // The block over x [M, d] (in place; attn_input as DecoderBlock::run), then the output
  // norm and matmul into logits_ [M, n_out].
  void block_and_output(const View& x, const PagedBatchInputs& inputs, int64_t n_out, int64_t piece,
                        const View* attn_input);
  // The pass rows whose logits are wanted (each entry's from its first_logit_row), into
  // logit_rows_.
  void select_logit_rows(std::span<const Entry> entries);
  // The norm (`norm`, or none when x is normed already) and output matmul of the wanted rows
  // of x [M, d] into logits_ [R, n_out], R = logit_rows_.size(), piece by piece.
  void output_logits(const View& x, int64_t n_out, int64_t piece, const View* norm);
  // Each entry's rows of x_ (its hidden, when asked for) and of logits_ [M, n_out], checked
  // finite, in entry order.
  void download_outputs(std::span<const Entry> entries, int64_t n_out);
  void check_cache(const KvCache& cache, const char* op) const;
  void ensure_scratch(int64_t m);
  void broadcast(const View& row, const View& y);  // y[i, :] = row[0, :]

  GgufFile head_file_, target_file_;  // keep the mappings alive: weights refer to them
  Device* device_;
  HeadInfo info_;
  float target_eps_ = 1e-5f;
  std::vector<Buffer> buffers_;
  View tok_embd_, output_norm_, output_;  // target: [V, d], [1, d], [V, d]
  std::vector<MedusaHead> medusa_;
  View fc_, fc_bias_;                // EAGLE: [d, 2d], [1, d]
  View hnorm_, enorm_, eh_;          // MTP: [1, d], [1, d], [d, 2d]
  View head_norm_;                   // nextn: shared_head_norm (or output_norm) [1, d]
  View fc3_, gnorm_;                 // EAGLE-3: [d, input_dim], [1, d] (blk.0.attn_norm_2)
  std::vector<int32_t> d2t_;         // EAGLE-3: target id of each draft-vocabulary row, or empty
  std::vector<float> draft_logits_;  // EAGLE-3 with d2t: [m, draft_vocab] before scatter
  Buffer enc_, enc_out_;             // EAGLE-3: a piece of target features and their fusion
  View enc_norm_;                    // DFlash: [1, d], after fc
  std::vector<std::unique_ptr<DecoderBlock>> layers_;  // DFlash
  std::unique_ptr<DecoderBlock> block_;
  std::shared_ptr<KvPool> kv_pool_;
  specd_dtype kv_dtype_ = SPECD_DTYPE_F32;
  BlockScratch block_scratch_;
  int64_t rows_ = 0;
  Buffer u_, x_, h_, t_, logits_, ones_, zero_ids_, ints_;
  std::vector<int32_t> logit_rows_;  // the pass's rows whose logits are wanted
  Buffer logit_ids_;                 // the same on the device
};

}  // namespace specd
