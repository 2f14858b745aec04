#include "models/llama_model.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "gguf/ggml_types.hpp"
#include "models/architecture.hpp"
#include "models/architectures/architectures.hpp"
#include "models/batch_mask.hpp"
#include "models/hyperparameters.hpp"
#include "models/kv_layout.hpp"
#include "models/weight_loader.hpp"

namespace specd {

LlamaModel::LlamaModel(GgufFile file, Device& device) : file_(std::move(file)), device_(&device) {
  // The restore a hybrid model uses; snapshot is the alternative measured against it.
  if (const char* e = std::getenv("SPECD_RECURRENT_RESTORE")) {
    const std::string v = e;
    if (v == "snapshot")
      restore_ = RecurrentRestore::kSnapshot;
    else if (v != "replay" && !v.empty())
      throw UsageError("SPECD_RECURRENT_RESTORE='" + v + "': expected replay or snapshot");
  }
}

bool is_mtp_tensor(std::string_view name, int32_t n_trunk) {
  if (!name.starts_with("blk.")) return false;
  name.remove_prefix(4);
  int64_t layer = 0;
  size_t digits = 0;
  while (digits < name.size() && digits < 9 && name[digits] >= '0' && name[digits] <= '9')
    layer = layer * 10 + (name[digits++] - '0');
  return digits > 0 && digits < name.size() && name[digits] == '.' && layer >= n_trunk;
}

void LlamaModel::read_hybrid_hyperparameters() {
  ModelInfo& in = info_;
  const GgufFile& f = file_;
  const std::string a = std::string(arch_->name) + ".";
  const std::string& path = f.path();
  in.ssm_conv = positive_int_key(f, a + "ssm.conv_kernel");
  in.ssm_head_dim = positive_int_key(f, a + "ssm.state_size");
  in.ssm_key_heads = positive_int_key(f, a + "ssm.group_count");
  in.ssm_value_heads = positive_int_key(f, a + "ssm.time_step_rank");
  const int32_t inner = positive_int_key(f, a + "ssm.inner_size");
  if (in.ssm_value_heads % in.ssm_key_heads != 0)
    throw Error(path + ": " + a + "ssm.time_step_rank " + std::to_string(in.ssm_value_heads) +
                " (value heads) is not a multiple of " + a + "ssm.group_count " +
                std::to_string(in.ssm_key_heads) + " (key heads)");
  if (static_cast<int64_t>(in.ssm_value_heads) * in.ssm_head_dim != inner)
    throw Error(path + ": " + a + "ssm.inner_size " + std::to_string(inner) + " is not " + a +
                "ssm.time_step_rank x ssm.state_size (value heads of the key heads' size)");
  if (in.ssm_conv < 2 || in.ssm_conv > 9)
    throw Error(path + ": " + a + "ssm.conv_kernel " + std::to_string(in.ssm_conv) +
                " is outside [2, 9]");
  // Which layers are recurrent: an explicit list, else every layer but each interval-th.
  in.recurrent.assign(static_cast<size_t>(in.n_layer), false);
  if (const GgufValue* list = f.get_array_opt(a + "attention.recurrent_layers", GgufType::kBool)) {
    if (list->array_size() < static_cast<size_t>(in.n_layer))
      throw Error(path + ": " + a + "attention.recurrent_layers lists " +
                  std::to_string(list->array_size()) + " layers, fewer than " +
                  std::to_string(in.n_layer));
    for (int32_t l = 0; l < in.n_layer; ++l) in.recurrent[l] = list->uint_at(l) != 0;
  } else {
    const int32_t interval = positive_int_key_or(f, a + "full_attention_interval", 4);
    for (int32_t l = 0; l < in.n_layer; ++l) in.recurrent[l] = (l + 1) % interval != 0;
  }
  // Interleaved MRoPE: for text every section has the token's position, which is NEOX RoPE
  // over n_rot values; the sections must still be there and fit, as llama.cpp asks.
  const GgufValue& sections = f.get_array(a + "rope.dimension_sections");
  if (!gguf_is_integer(sections.elem_type))
    throw Error(path + ": " + a + "rope.dimension_sections holds " +
                gguf_type_name(sections.elem_type) + " values, not integers");
  int64_t covered = 0;
  for (size_t i = 0; i < sections.array_size(); ++i) {
    const int64_t v = sections.int_at(i);
    if (v < 0) throw Error(path + ": " + a + "rope.dimension_sections has a negative section");
    covered += v;
  }
  if (sections.array_size() > 4 || covered > in.n_rot / 2)
    throw Error(path + ": " + a + "rope.dimension_sections (" + std::to_string(covered) +
                " pairs in " + std::to_string(sections.array_size()) +
                " sections) does not fit rope.dimension_count " + std::to_string(in.n_rot));
}
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
  // llama.cpp counts a file's MTP layers (blk.N.nextn.*) in block_count. A hybrid model's
  // trunk stops before them (the mtp proposer runs them); for other architectures, run as
  // ordinary layers they would change every output, so such a file is refused, not misread.
  if (const auto nextn = f.get_u32_opt(a + "nextn_predict_layers"); nextn && *nextn > 0) {
    if (!arch_->hybrid)
      throw UsageError(path + ": its last " + std::to_string(*nextn) + " of " +
                       std::to_string(in.n_layer) + " blocks are MTP (" + a +
                       "nextn_predict_layers) layers, which specd runs from " +
                       "hybrid (qwen35, qwen35moe) files only; MTP drafting for '" +
                       in.architecture + "' takes a specd-mtp head ([proposer] kind = \"mtp\")");
    if (static_cast<int64_t>(*nextn) >= in.n_layer)
      throw Error(path + ": " + a + "nextn_predict_layers " + std::to_string(*nextn) +
                  " leaves no trunk layers of " + a + "block_count " + std::to_string(in.n_layer));
    in.n_nextn = static_cast<int32_t>(*nextn);
    in.n_layer -= in.n_nextn;
  }
  in.n_ff = ffn_length(f, a, arch_->experts != ExpertRouting::kNone);
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
  // llama.cpp's openai-moe scales attention by 1/sqrt(n_rot) and specd by 1/sqrt(head size):
  // one value in gpt-oss, whose RoPE turns whole heads.
  if (arch_ == &architectures::kGptOss && in.n_rot != in.head_dim)
    throw Error(path + ": " + a + "rope.dimension_count " + std::to_string(in.n_rot) +
                " is not the head size " + std::to_string(in.head_dim) +
                " (gpt-oss turns whole heads)");
  const RopeScaling scaling = rope_scaling(f, a, in.n_ctx);
  in.rope_freq_scale = scaling.freq_scale;
  in.yarn = scaling.yarn;
  if (arch_->hybrid) read_hybrid_hyperparameters();
  read_expert_hyperparameters();
  if (const int32_t period = arch_->sliding_window_period; period > 0) {
    in.sliding_window = positive_int_key(f, a + "attention.sliding_window");
    for (int32_t l = 0; l < in.n_layer; ++l) in.sliding.push_back(l % period < period - 1);
  }
}

void LlamaModel::read_expert_hyperparameters() {
  ModelInfo& in = info_;
  const GgufFile& f = file_;
  const std::string a = std::string(arch_->name) + ".";
  const std::string& path = f.path();
  const auto count = f.get_u32_opt(a + "expert_count");
  if (arch_->experts == ExpertRouting::kNone) {
    if (count && *count > 0)
      throw UsageError(path + ": " + a + "expert_count is " + std::to_string(*count) +
                       ": mixture-of-experts '" + in.architecture +
                       "' files are not supported (mixtures of experts: qwen3moe, gpt-oss, "
                       "qwen35moe)");
    return;
  }
  const MoeShape moe = read_moe_shape(f, a, *arch_, in.n_ff);
  in.n_expert = moe.n_expert;
  in.n_expert_used = moe.n_used;
  in.n_ff_exp = moe.n_ff;
  in.n_ff_shared = moe.n_ff_shared;
}

void LlamaModel::load_weights() {
  ModelInfo& in = info_;
  const std::string a = std::string(arch_->name) + ".";
  const GgufTensor& embd = file_.require_tensor("token_embd.weight");
  if (embd.n_dims != 2 || embd.ne[0] != in.n_embd)
    throw Error(in.path + ": tensor 'token_embd.weight' must have ne = [" +
                std::to_string(in.n_embd) + ", vocab]");
  if (embd.ne[1] == 0)
    throw Error(in.path + ": tensor 'token_embd.weight' has 0 rows: the model has no vocabulary");
  in.vocab_size = static_cast<int32_t>(embd.ne[1]);
  if (auto vs = file_.get_u32_opt(a + "vocab_size"); vs && *vs != embd.ne[1])
    throw Error(in.path + ": " + a + "vocab_size " + std::to_string(*vs) +
                " does not match token_embd.weight (" + std::to_string(embd.ne[1]) + " rows)");
  const int64_t d = in.n_embd, V = in.vocab_size;
  BlockShape shape{in.n_embd,    in.n_head,  in.n_head_kv, in.head_dim,        in.n_ff, in.n_rot,
                   in.rope_base, in.rms_eps, in.rope_mode, in.rope_freq_scale, in.yarn};
  if (in.hybrid()) {
    shape.gated_attention = true;
    shape.dn_key_heads = in.ssm_key_heads;
    shape.dn_value_heads = in.ssm_value_heads;
    shape.dn_head_dim = in.ssm_head_dim;
    shape.dn_conv = in.ssm_conv;
  }
  if (in.n_expert > 0) shape.moe = read_moe_shape(file_, a, *arch_, in.n_ff);
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
    const std::string prefix = "blk." + std::to_string(l) + ".";
    BlockShape layer_shape = shape;
    if (!in.sliding.empty() && in.sliding[l]) layer_shape.window = in.sliding_window;
    BlockWeights w = in.hybrid() && in.recurrent[l]
                         ? load_delta_block(load, prefix, layer_shape, *arch_)
                         : load_block(load, prefix, layer_shape, *arch_);
    w.rope_factors = rope_factors;
    layers_.emplace_back(*device_, layer_shape, w);
  }
  // The MTP layers after the trunk are the mtp proposer's (heads/mtp_layer.cpp).
  for (const GgufTensor& t : file_.tensors())
    if (is_mtp_tensor(t.name, in.n_layer)) load.mark_read(t.name);
  output_norm_ = load.vector("output_norm.weight", d);
  in.tied_output = file_.tensor("output.weight") == nullptr;
  output_ = in.tied_output ? tok_embd_ : load.matrix("output.weight", d, V);  // [V, d]
  in.weight_type =
      dtype_name(layers_.empty()                    ? tok_embd_.dtype()
                 : layers_[0].weights().recurrent() ? layers_[0].weights().dn.qkv.dtype()
                                                    : layers_[0].weights().wq.dtype());
  load.refuse_unread("a " + std::to_string(in.n_layer) + "-layer " + in.architecture +
                     " model (a wrong block_count, or a feature this runtime does not support)");
  in.n_params = load.n_params();
  std::string features;
  if (!layers_.empty() && layers_[0].weights().needs_abi_0_2(shape, &features))
    device_->backend().require_minor(
        2, in.path + " (architecture '" + in.architecture + "': " + features + ")");
  for (const DecoderBlock& layer : layers_)
    if (layer.weights().needs_abi_0_8(layer.shape(), &features)) {
      device_->backend().require_minor(
          8, in.path + " (architecture '" + in.architecture + "': " + features + ")");
      break;
    }
  if (shape.moe.activation == ExpertActivation::kSwigluOai)
    device_->require_swiglu_oai(in.path + " (architecture '" + in.architecture + "')");
  if (in.hybrid())
    device_->require_hybrid_ops(in.path + " (architecture '" + in.architecture +
                                "': gated DeltaNet layers and gated attention)");
}

KvPool& LlamaModel::kv_pool() {
  if (kv_pool_) return *kv_pool_;
  // Attention layers keep KV rows, sliding-window layers theirs in the window pool, recurrent
  // layers a state per sequence (kv_index_ maps a layer to its place in its pool).
  int32_t n_kv = 0, n_window = 0, n_state = 0;
  kv_index_.clear();
  for (int32_t l = 0; l < info_.n_layer; ++l)
    kv_index_.push_back(layers_[l].weights().recurrent() ? n_state++
                        : layers_[l].shape().window > 0  ? n_window++
                                                         : n_kv++);
  const int64_t kv_dim = static_cast<int64_t>(info_.n_head_kv) * info_.head_dim;
  kv_pool_ = std::make_shared<KvPool>(*device_, std::max(n_kv, 1), kv_dim, kKvBlockRows, kv_dtype_);
  if (n_window > 0)
    kv_pool_->set_window(
        std::make_unique<KvPool>(*device_, n_window, kv_dim, kKvBlockRows, kv_dtype_),
        info_.sliding_window);
  if (n_state > 0) {
    const BlockShape& s = layers_[0].shape();
    RecurrentShape shape;
    shape.channels = s.dn_channels();
    shape.value_heads = s.dn_value_heads;
    shape.head_dim = s.dn_head_dim;
    shape.conv_taps = s.dn_conv;
    kv_pool_->set_recurrent(std::make_unique<RecurrentPool>(*device_, n_state, shape, restore_));
  }
  return *kv_pool_;
}

void LlamaModel::set_feature_layers(std::vector<int32_t> layers) {
  for (int32_t l : layers)
    if (l < 0 || l > info_.n_layer)
      throw UsageError(info_.path + ": features of layer " + std::to_string(l) +
                       " were asked for, but the model has " + std::to_string(info_.n_layer) +
                       " layers (0.." + std::to_string(info_.n_layer) + " can be read)");
  feature_layers_ = std::move(layers);
}

int32_t LlamaModel::feature_dim() const {
  const size_t n = feature_layers_.empty() ? 1 : feature_layers_.size();
  return static_cast<int32_t>(n) * info_.n_embd;
}

void LlamaModel::set_kv_dtype(specd_dtype dtype) {
  if (kv_pool_ && dtype != kv_dtype_)
    throw Error(info_.path + ": the KV cache type is set before the first cache is made");
  if (dtype == SPECD_DTYPE_Q8_0 && info_.head_dim % 32 != 0)
    throw UsageError(info_.path + ": a q8_0 KV cache needs a head size that is a multiple of 32 (" +
                     std::to_string(info_.head_dim) + " here)");
  if (dtype != SPECD_DTYPE_F32 && dtype != SPECD_DTYPE_F16 && dtype != SPECD_DTYPE_Q8_0)
    throw Error(info_.path + ": a KV cache holds f32, f16 or q8_0 rows");
  kv_dtype_ = dtype;
}

std::unique_ptr<KvCache> LlamaModel::new_cache(int32_t max_tokens) {
  if (max_tokens <= 0) throw Error("new_cache: max_tokens must be > 0");
  kv_pool();
  return std::make_unique<KvCache>(kv_pool_, max_tokens);
}

void LlamaModel::reserve_kv(int64_t rows) {
  const int64_t blocks = (rows + kKvBlockRows - 1) / kKvBlockRows;
  if (blocks * kKvBlockRows > INT32_MAX)
    throw Error("reserve_kv: " + std::to_string(rows) + " rows are more than a KV pool holds");
  kv_pool().reserve(static_cast<int32_t>(blocks));
}

void LlamaModel::ensure_scratch(int32_t m, int32_t logit_rows, size_t n_ints) {
  if (m > s_.rows) {
    s_.x = device_->alloc(static_cast<uint64_t>(m) * info_.n_embd * 4);
    s_.rows = m;
  }
  if (logit_rows > s_.logit_rows) {
    s_.logits = device_->alloc(static_cast<uint64_t>(logit_rows) * info_.vocab_size * 4);
    s_.packed = device_->alloc(static_cast<uint64_t>(logit_rows) * info_.n_embd * 4);
    s_.logit_rows = logit_rows;
  }
  s_.block.ensure(*device_, layers_.front().shape(), m);
  if (!s_.ints || s_.ints.size() < n_ints * 4) s_.ints = device_->alloc(n_ints * 4 * 2);
}

void LlamaModel::check_cache(const KvCache& cache, const char* op) const {
  if (!kv_pool_ || &cache.pool() != kv_pool_.get())
    throw Error(std::string(op) + ": the cache belongs to a different model");
}

void LlamaModel::check_entry(const KvCache& cache, std::span<const int32_t> tokens,
                             std::span<const int32_t> positions, std::span<const int32_t> parents,
                             const float* logits, int32_t first_logit_row) const {
  const int32_t m = static_cast<int32_t>(tokens.size());
  const ModelInfo& in = info_;
  check_cache(cache, "forward");
  if (m == 0) throw Error("forward: no tokens");
  if (first_logit_row < 0 || first_logit_row > m)
    throw Error("forward: first_logit_row " + std::to_string(first_logit_row) + " is outside [0, " +
                std::to_string(m) + "]");
  if (m - first_logit_row > 0 && logits == nullptr) throw Error("forward: logits is null");
  if (positions.size() != tokens.size() || parents.size() != tokens.size())
    throw Error("forward: tokens, positions and parents differ in length");
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
  ForwardEntry e;
  e.cache = &cache;
  e.tokens = tokens;
  e.positions = positions;
  e.parents = parents;
  e.logits = logits;
  e.hidden = hidden;
  e.first_logit_row = first_logit_row;
  forward_batch(std::span<const ForwardEntry>(&e, 1));
}

void LlamaModel::set_recurrent_restore(RecurrentRestore restore) {
  if (kv_pool_ && restore != restore_)
    throw Error(info_.path + ": the recurrent restore is set before the first cache is made");
  restore_ = restore;
}

DecoderBlock::DeltaState LlamaModel::delta_state(int32_t at, int32_t first, int32_t rows) const {
  const RecurrentPool& r = *kv_pool_->recurrent();
  DecoderBlock::DeltaState s;
  s.conv = r.conv(at);
  s.ssm = r.ssm(at);
  if (rows > 0) {
    s.store_qkv = r.replay_qkv(at, first, rows);
    s.store_alpha = r.replay_alpha(at, first, rows);
    s.store_beta = r.replay_beta(at, first, rows);
  }
  return s;
}

void LlamaModel::replay(KvCache& cache, int32_t rows) {
  const RecurrentPool& r = *kv_pool_->recurrent();
  const KvCache::Replay& stored = cache.replay();
  if (stored.pass != r.pass())
    throw Error(
        "commit: a later pass replaced the rows this commit runs again (commit each "
        "pass's rows before the next pass)");
  // From the committed state to the committed slot (read before written): row 0 from it,
  // the last row into it.
  const int32_t slot = cache.state_slot();
  std::vector<int32_t> ints(static_cast<size_t>(2 * rows), -1);
  ints[0] = slot;
  ints[static_cast<size_t>(2 * rows - 1)] = slot;
  if (!replay_ints_ || replay_ints_.size() < ints.size() * 4)
    replay_ints_ = device_->alloc(ints.size() * 4 * 2);
  replay_ints_.upload(ints.data(), ints.size() * 4);
  const View in = replay_ints_.view(SPECD_DTYPE_I32, 1, rows);
  const View out = replay_ints_.view(SPECD_DTYPE_I32, 1, rows, static_cast<uint64_t>(rows) * 4);
  s_.block.ensure(*device_, layers_.front().shape(), rows);
  for (int32_t l = 0; l < info_.n_layer; ++l)
    if (layers_[l].weights().recurrent())
      layers_[l].replay_delta(delta_state(kv_index_[l], stored.first, rows), in, out, s_.block);
}

void LlamaModel::commit(KvCache& cache, std::span<const int32_t> kept_rows) {
  check_cache(cache, "commit");
  if (const int32_t rows = cache.replay_rows(kept_rows)) {
    const auto t0 = std::chrono::steady_clock::now();
    replay(cache, rows);
    device_->synchronize();
    constexpr size_t kKept = 15;
    if (replay_times_.size() == kKept) replay_times_.erase(replay_times_.begin());
    replay_times_.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cache.commit_replayed(kept_rows);
    return;
  }
  cache.commit(kept_rows);
}

double LlamaModel::replay_seconds() const {
  if (replay_times_.empty()) return 0.0;
  std::vector<double> t = replay_times_;
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

void LlamaModel::truncate(KvCache& cache, int32_t n_committed) {
  check_cache(cache, "truncate");
  cache.truncate(n_committed);
}

}  // namespace specd
