#include "models/llama_model.hpp"

#include <cmath>
#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "gguf/ggml_types.hpp"
#include "models/architecture.hpp"
#include "models/batch_mask.hpp"
#include "models/hyperparameters.hpp"
#include "models/kv_layout.hpp"
#include "models/weight_loader.hpp"

namespace specd {

LlamaModel::LlamaModel(GgufFile file, Device& device) : file_(std::move(file)), device_(&device) {}
LlamaModel::~LlamaModel() = default;

std::unique_ptr<LlamaModel> LlamaModel::load(const std::string& gguf_path, Device& device) {
  return load(GgufFile::open(gguf_path), device);
}

std::unique_ptr<LlamaModel> LlamaModel::load(GgufFile file, Device& device) {
  const Architecture& arch = architecture_of(file);
  std::unique_ptr<LlamaModel> model(new LlamaModel(std::move(file), device));
  model->arch_ = &arch;
  model->read_hyperparameters();
  model->load_weights();
  return model;
}

void LlamaModel::read_hyperparameters() {
  ModelInfo& in = info_;
  const GgufFile& f = file_;
  const std::string a = std::string(arch_->name) + ".";  // the metadata prefix
  const std::string& path = f.path();
  in.path = path;
  in.architecture = arch_->name;
  in.name = f.get_string_opt("general.name").value_or("");
  in.n_embd = positive_int_key(f, a + "embedding_length");
  in.n_layer = positive_int_key(f, a + "block_count");
  in.n_ff = positive_int_key(f, a + "feed_forward_length");
  in.n_head = positive_int_key(f, a + "attention.head_count");
  in.n_head_kv = positive_int_key_or(f, a + "attention.head_count_kv", in.n_head);
  in.n_ctx = positive_int_key_or(f, a + "context_length", 2048);
  const std::string key_length = a + "attention.key_length";
  in.head_dim = positive_int_key_or(f, key_length, in.n_embd / in.n_head);
  if (f.has(key_length) &&
      f.get_u32(key_length) != f.get_u32_opt(a + "attention.value_length").value_or(in.head_dim))
    throw Error(path + ": " + key_length + " != " + a + "attention.value_length is not supported");
  if (!f.has(key_length) && in.n_embd % in.n_head != 0)
    throw Error(path + ": " + a + "embedding_length " + std::to_string(in.n_embd) +
                " is not a multiple of " + a + "attention.head_count " + std::to_string(in.n_head));
  if (in.n_head % in.n_head_kv != 0)
    throw Error(path + ": " + a + "attention.head_count " + std::to_string(in.n_head) +
                " is not a multiple of head_count_kv " + std::to_string(in.n_head_kv));
  in.n_rot = positive_int_key_or(f, a + "rope.dimension_count", in.head_dim);
  if (in.n_rot > in.head_dim || in.n_rot % 2 != 0 || in.head_dim % 2 != 0)
    throw Error(path + ": " + a + "rope.dimension_count " + std::to_string(in.n_rot) +
                " must be even and <= head dim " + std::to_string(in.head_dim));
  in.rope_base = positive_float_key_or(f, a + "rope.freq_base", 10000.0f);
  in.rms_eps = positive_float_key_or(f, a + "attention.layer_norm_rms_epsilon", 1e-5f);
  in.rope_mode = arch_->rope_mode;
  in.rope_freq_scale = rope_freq_scale(f, a);
}

void LlamaModel::load_weights() {
  ModelInfo& in = info_;
  const std::string a = std::string(arch_->name) + ".";
  const GgufTensor& embd = file_.require_tensor("token_embd.weight");
  if (embd.n_dims != 2 || embd.ne[0] != in.n_embd)
    throw Error(in.path + ": tensor 'token_embd.weight' must have ne = [" +
                std::to_string(in.n_embd) + ", vocab]");
  in.vocab_size = static_cast<int32_t>(embd.ne[1]);
  if (auto vs = file_.get_u32_opt(a + "vocab_size"); vs && *vs != embd.ne[1])
    throw Error(in.path + ": " + a + "vocab_size " + std::to_string(*vs) +
                " does not match token_embd.weight (" + std::to_string(embd.ne[1]) + " rows)");
  const int64_t d = in.n_embd, V = in.vocab_size;
  BlockShape shape{in.n_embd, in.n_head, in.n_head_kv, in.head_dim,
                   in.n_ff,   in.n_rot,  in.rope_base, in.rms_eps};
  shape.rope_mode = in.rope_mode;
  shape.rope_freq_scale = in.rope_freq_scale;
  WeightLoader load(file_, *device_, buffers_);
  tok_embd_ = load.matrix("token_embd.weight", d, V);  // [V, d]
  View rope_factors;
  if (arch_->rope_freqs != Presence::kAbsent &&
      (arch_->rope_freqs == Presence::kRequired || load.has("rope_freqs.weight"))) {
    std::vector<float> v;
    rope_factors = load.vector("rope_freqs.weight", in.n_rot / 2, &v);  // [1, n_rot/2]
    for (size_t j = 0; j < v.size(); ++j)
      if (!std::isfinite(v[j]) || v[j] <= 0.0f)
        throw Error(in.path + ": tensor 'rope_freqs.weight' holds " + std::to_string(v[j]) +
                    " at " + std::to_string(j) + "; frequency divisors must be finite and > 0");
    in.rope_freqs = true;
  }
  for (int32_t l = 0; l < in.n_layer; ++l) {
    BlockWeights w = load_block(load, "blk." + std::to_string(l) + ".", shape, *arch_);
    w.rope_factors = rope_factors;
    layers_.emplace_back(*device_, shape, w);
  }
  output_norm_ = load.vector("output_norm.weight", d);
  in.tied_output = file_.tensor("output.weight") == nullptr;
  output_ = in.tied_output ? tok_embd_ : load.matrix("output.weight", d, V);  // [V, d]
  in.weight_type =
      dtype_name(layers_.empty() ? tok_embd_.dtype() : layers_[0].weights().wq.dtype());
  load.refuse_unread("a " + std::to_string(in.n_layer) + "-layer " + in.architecture +
                     " model (a wrong block_count, or a feature this runtime does not support)");
  in.n_params = load.n_params();
  std::string features;
  if (!layers_.empty() && layers_[0].weights().needs_abi_0_2(shape, &features))
    device_->backend().require_minor(
        2, in.path + " (architecture '" + in.architecture + "': " + features + ")");
}

std::unique_ptr<KvCache> LlamaModel::new_cache(int32_t max_tokens) const {
  if (max_tokens <= 0) throw Error("new_cache: max_tokens must be > 0");
  std::unique_ptr<KvCache> c(new KvCache);
  c->capacity_ = max_tokens;
  const int64_t kvd = static_cast<int64_t>(info_.n_head_kv) * info_.head_dim;
  const uint64_t bytes = static_cast<uint64_t>(max_tokens) * kv_row_bytes(kvd);
  for (int32_t l = 0; l < info_.n_layer; ++l) {
    c->k_.push_back(device_->alloc(bytes));
    c->v_.push_back(device_->alloc(bytes));
  }
  c->index_ = device_->alloc(static_cast<uint64_t>(max_tokens) * 4);
  return c;
}

void LlamaModel::ensure_scratch(int32_t m, int32_t logit_rows, size_t n_ints) {
  if (m > s_.rows) {
    s_.x = device_->alloc(static_cast<uint64_t>(m) * info_.n_embd * 4);
    s_.rows = m;
  }
  if (logit_rows > s_.logit_rows) {
    s_.logits = device_->alloc(static_cast<uint64_t>(logit_rows) * info_.vocab_size * 4);
    s_.logit_rows = logit_rows;
  }
  s_.block.ensure(*device_, layers_.front().shape(), m);
  if (!s_.ints || s_.ints.size() < n_ints * 4) s_.ints = device_->alloc(n_ints * 4 * 2);
}

void LlamaModel::check_entry(const KvCache& cache, std::span<const int32_t> tokens,
                             std::span<const int32_t> positions, std::span<const int32_t> parents,
                             const float* logits, int32_t first_logit_row) const {
  const int32_t m = static_cast<int32_t>(tokens.size());
  const ModelInfo& in = info_;
  if (m == 0) throw Error("forward: no tokens");
  if (first_logit_row < 0 || first_logit_row > m)
    throw Error("forward: first_logit_row " + std::to_string(first_logit_row) + " is outside [0, " +
                std::to_string(m) + "]");
  if (m - first_logit_row > 0 && logits == nullptr) throw Error("forward: logits is null");
  if (positions.size() != tokens.size() || parents.size() != tokens.size())
    throw Error("forward: tokens, positions and parents differ in length");
  if (cache.size() + m > cache.capacity())
    throw Error("forward: " + std::to_string(cache.size()) + " committed + " + std::to_string(m) +
                " new rows exceed the cache capacity " + std::to_string(cache.capacity()));
  if (cache.k_.size() != static_cast<size_t>(in.n_layer))
    throw Error("forward: the cache belongs to a different model");
  for (int32_t i = 0; i < m; ++i) {
    if (tokens[i] < 0 || tokens[i] >= in.vocab_size)
      throw Error("forward: token " + std::to_string(tokens[i]) + " at row " + std::to_string(i) +
                  " is outside the vocabulary [0, " + std::to_string(in.vocab_size) + ")");
    if (positions[i] < 0) throw Error("forward: negative position at row " + std::to_string(i));
  }
}

void LlamaModel::forward(KvCache& cache, std::span<const int32_t> tokens,
                         std::span<const int32_t> positions, std::span<const int32_t> parents,
                         float* logits, float* hidden, int32_t first_logit_row) {
  const int32_t m = static_cast<int32_t>(tokens.size());
  const ModelInfo& in = info_;
  check_entry(cache, tokens, positions, parents, logits, first_logit_row);
  const int32_t logit_rows = m - first_logit_row;
  const BatchMask mask = build_batch_mask(cache.size(), parents);

  // One upload of every int32 input: tokens, positions, prefix_len, extra_begin, extra_slots.
  std::vector<int32_t> ints;
  ints.reserve(4 * m + 1 + mask.extra_slots.size());
  ints.insert(ints.end(), tokens.begin(), tokens.end());
  ints.insert(ints.end(), positions.begin(), positions.end());
  ints.insert(ints.end(), mask.prefix_len.begin(), mask.prefix_len.end());
  ints.insert(ints.end(), mask.extra_begin.begin(), mask.extra_begin.end());
  ints.insert(ints.end(), mask.extra_slots.begin(), mask.extra_slots.end());
  ensure_scratch(m, logit_rows, ints.size());
  s_.ints.upload(ints.data(), ints.size() * 4);
  const View v_tokens = s_.ints.view(SPECD_DTYPE_I32, 1, m, 0);
  const View v_pos = s_.ints.view(SPECD_DTYPE_I32, 1, m, 4ull * m);
  const View v_prefix = s_.ints.view(SPECD_DTYPE_I32, 1, m, 8ull * m);
  const View v_begin = s_.ints.view(SPECD_DTYPE_I32, 1, m + 1, 12ull * m);
  const int64_t n_extra = static_cast<int64_t>(mask.extra_slots.size());
  const View v_extra = s_.ints.view(SPECD_DTYPE_I32, 1, n_extra ? n_extra : 1, 16ull * m + 4);

  const int64_t d = in.n_embd, kvd = layers_.front().shape().kv_dim();
  const View x = s_.x.view(SPECD_DTYPE_F32, m, d);  // residual stream [m, d]
  Device& dev = *device_;

  dev.get_rows(tok_embd_, v_tokens, x);
  BlockBatch batch;
  batch.first_row = cache.size();
  batch.positions = v_pos;
  batch.prefix_len = v_prefix;
  batch.extra_begin = v_begin;
  batch.extra_slots = n_extra ? &v_extra : nullptr;
  for (int32_t l = 0; l < in.n_layer; ++l) {
    batch.k_cache = kv_rows(cache.k_[l], cache.capacity(), kvd);  // [cap, Hkv*hd]
    batch.v_cache = kv_rows(cache.v_[l], cache.capacity(), kvd);  // [cap, Hkv*hd]
    layers_[l].run(x, batch, s_.block);
  }
  if (hidden) s_.x.download(hidden, static_cast<uint64_t>(m) * d * 4);
  if (logit_rows > 0) {
    // The final norm and the output projection on the rows whose logits are wanted only.
    const uint64_t first = static_cast<uint64_t>(first_logit_row) * d * 4;
    const View x_out = s_.x.view(SPECD_DTYPE_F32, logit_rows, d, first);          // [r, d]
    const View h_out = s_.block.h.view(SPECD_DTYPE_F32, logit_rows, d, first);    // [r, d]
    const View out = s_.logits.view(SPECD_DTYPE_F32, logit_rows, in.vocab_size);  // [r, V]
    dev.rms_norm(x_out, output_norm_, in.rms_eps, h_out);
    dev.matmul(h_out, output_, out);
    s_.logits.download(logits, static_cast<uint64_t>(logit_rows) * in.vocab_size * 4);
  }
  cache.parents_.assign(parents.begin(), parents.end());
}

void LlamaModel::commit(KvCache& cache, std::span<const int32_t> kept_rows) {
  const int32_t k = static_cast<int32_t>(kept_rows.size());
  for (int32_t j = 0; j < k; ++j) {
    const int32_t r = kept_rows[j];
    if (r < 0 || r >= cache.pending())
      throw Error("commit: row " + std::to_string(r) + " is not a pending row (there are " +
                  std::to_string(cache.pending()) + ")");
    const int32_t want_parent = j == 0 ? -1 : kept_rows[j - 1];
    if (cache.parents_[r] != want_parent)
      throw Error(
          "commit: row " + std::to_string(r) + " is not the child of " +
          (j == 0 ? std::string("the committed prefix") : "row " + std::to_string(want_parent)));
  }
  bool identity = true;
  for (int32_t j = 0; j < k; ++j) identity = identity && kept_rows[j] == j;
  if (!identity) {
    // Rows n + kept[j] move to n + j; kept rows increase (parents precede children).
    std::vector<int32_t> idx(k);
    for (int32_t j = 0; j < k; ++j) idx[j] = cache.size() + kept_rows[j];
    cache.index_.upload(idx.data(), idx.size() * 4);
    const View vi = cache.index_.view(SPECD_DTYPE_I32, 1, k);
    const int64_t kvd = static_cast<int64_t>(info_.n_head_kv) * info_.head_dim;
    for (int32_t l = 0; l < info_.n_layer; ++l) {
      for (Buffer* b : {&cache.k_[l], &cache.v_[l]}) {
        const View all = kv_rows(*b, cache.capacity(), kvd);
        device_->copy_rows(all, vi, all.slice_rows(cache.size(), k));
      }
    }
  }
  device_->synchronize();  // the index buffer may be rewritten by the next commit
  cache.committed_ += k;
  cache.parents_.clear();
}

void LlamaModel::truncate(KvCache& cache, int32_t n_committed) {
  if (n_committed < 0 || n_committed > cache.size())
    throw Error("truncate: " + std::to_string(n_committed) + " is outside [0, " +
                std::to_string(cache.size()) + "]");
  cache.committed_ = n_committed;
  cache.parents_.clear();
}

}  // namespace specd
