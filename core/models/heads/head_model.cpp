#include "models/heads/head_model.hpp"

#include <utility>

#include "common/error.hpp"
#include "models/architecture.hpp"
#include "models/heads/target_binding.hpp"
#include "models/hyperparameters.hpp"
#include "models/kv_layout.hpp"
#include "models/weight_loader.hpp"

namespace specd {
namespace {

// The block of the EAGLE and MTP heads (train/FORMATS.md): the plain llama block, with none
// of the optional tensors an architecture may add (a head file holding one is refused).
const Architecture kHeadBlock = {
    .name = "specd-head",
    .rope_mode = SPECD_ROPE_NORMAL,
};

HeadKind kind_of(const GgufFile& f, const std::string& arch) {
  if (has_mtp_layers(f)) return HeadKind::kNextn;
  if (arch == "specd-medusa") return HeadKind::kMedusa;
  if (arch == "specd-eagle") return HeadKind::kEagle;
  if (arch == "specd-mtp") return HeadKind::kMtp;
  if (arch == "eagle3") return HeadKind::kEagle3;
  if (arch == "dflash") return HeadKind::kDflash;
  throw Error(f.path() + ": architecture '" + arch +
              "' is not a head (expected specd-medusa, specd-eagle, specd-mtp, eagle3, dflash or a "
              "qwen35 or qwen35moe file with MTP layers)");
}

}  // namespace

HeadModel::HeadModel(GgufFile head, GgufFile target, Device& device)
    : head_file_(std::move(head)), target_file_(std::move(target)), device_(&device) {}
HeadModel::~HeadModel() = default;

std::unique_ptr<HeadModel> HeadModel::load(const std::string& head_path,
                                           const std::string& target_path, Device& device) {
  GgufFile head = GgufFile::open(head_path);
  const auto arch = head.get_string_opt("general.architecture");
  if (!arch) throw Error(head_path + ": no general.architecture: not a model file");
  const HeadKind kind = kind_of(head, *arch);
  GgufFile target = GgufFile::open(target_path);
  architecture_of(target);  // any supported model architecture can be a head's target
  // EAGLE-3 and DFlash files name no target: they are bound by shape and vocabulary.
  if (kind != HeadKind::kEagle3 && kind != HeadKind::kDflash && kind != HeadKind::kNextn)
    check_target_binding(head, target);
  std::unique_ptr<HeadModel> model(new HeadModel(std::move(head), std::move(target), device));
  model->info_.path = head_path;
  model->info_.architecture = kind == HeadKind::kNextn ? "nextn" : *arch;
  model->info_.kind = kind;
  if (kind == HeadKind::kEagle3) {
    model->load_eagle3();
  } else if (kind == HeadKind::kNextn) {
    model->load_nextn();
  } else if (kind == HeadKind::kDflash) {
    model->load_dflash();
  } else {
    model->load_target();
    model->load_head();
  }
  model->info_.input_dim = model->info_.input_dim ? model->info_.input_dim : model->info_.n_embd;
  model->info_.draft_vocab =
      model->info_.draft_vocab ? model->info_.draft_vocab : model->info_.vocab_size;
  return model;
}

void HeadModel::load_target() {
  const GgufFile& f = target_file_;
  const GgufTensor& embd = f.require_tensor("token_embd.weight");
  if (embd.n_dims != 2) throw Error(f.path() + ": token_embd.weight must be 2-D");
  info_.n_embd = static_cast<int32_t>(embd.ne[0]);
  info_.vocab_size = static_cast<int32_t>(embd.ne[1]);
  const std::string a = std::string(architecture_of(f).name) + ".";
  info_.n_ctx = positive_int_key_or(f, a + "context_length", 2048);
  target_eps_ = positive_float_key_or(f, a + "attention.layer_norm_rms_epsilon", 1e-5f);
  const int64_t d = info_.n_embd, V = info_.vocab_size;
  WeightLoader load(f, *device_, buffers_);
  tok_embd_ = load.matrix("token_embd.weight", d, V);                                    // [V, d]
  output_norm_ = load.vector("output_norm.weight", d);                                   // [1, d]
  output_ = f.tensor("output.weight") ? load.matrix("output.weight", d, V) : tok_embd_;  // [V, d]
}

void HeadModel::load_head() {
  const GgufFile& f = head_file_;
  HeadInfo& in = info_;
  const std::string a = in.architecture + ".";
  in.name = f.get_string_opt("general.name").value_or("");
  in.target_name = f.get_string_opt("specd.target.name").value_or("");
  const int32_t d = positive_int_key(f, a + "embedding_length");
  if (d != in.n_embd)
    throw Error(in.path + ": " + a + "embedding_length " + std::to_string(d) +
                " differs from the target's " + std::to_string(in.n_embd));
  if (auto v = f.get_u32_opt(a + "vocab_size"); v && static_cast<int32_t>(*v) != in.vocab_size)
    throw Error(in.path + ": " + a + "vocab_size " + std::to_string(*v) +
                " differs from the target's " + std::to_string(in.vocab_size));
  WeightLoader load(f, *device_, buffers_);
  if (in.kind == HeadKind::kMedusa) {
    in.n_heads = positive_int_key(f, a + "head_count");
    for (int32_t n = 0; n < in.n_heads; ++n) {
      const std::string p = "medusa." + std::to_string(n) + ".fc.";
      medusa_.push_back({load.matrix(p + "weight", d, d),  // [d, d]
                         load.vector(p + "bias", d)});     // [1, d]
    }
    load.refuse_unread("a " + std::to_string(in.n_heads) + "-head Medusa file");
    return;
  }
  BlockShape& s = in.block;
  s.n_embd = d;
  s.n_head = positive_int_key(f, a + "attention.head_count");
  s.n_head_kv = positive_int_key_or(f, a + "attention.head_count_kv", s.n_head);
  if (d % s.n_head != 0 || s.n_head % s.n_head_kv != 0)
    throw Error(in.path + ": head counts " + std::to_string(s.n_head) + "/" +
                std::to_string(s.n_head_kv) + " do not divide embedding_length " +
                std::to_string(d));
  s.head_dim = d / s.n_head;
  s.n_ff = positive_int_key(f, a + "feed_forward_length");
  s.n_rot = positive_int_key_or(f, a + "rope.dimension_count", s.head_dim);
  if (s.n_rot > s.head_dim || s.n_rot % 2 != 0)
    throw Error(in.path + ": rope.dimension_count must be even and <= the head dim");
  s.rope_base = positive_float_key_or(f, a + "rope.freq_base", 10000.0f);
  s.rms_eps = positive_float_key_or(f, a + "attention.layer_norm_rms_epsilon", 1e-5f);
  in.n_ctx = positive_int_key_or(f, a + "context_length", in.n_ctx);
  const RopeScaling scaling = rope_scaling(f, a, in.n_ctx);
  s.rope_freq_scale = scaling.freq_scale;
  s.yarn = scaling.yarn;
  if (auto blocks = f.get_u32_opt(a + "block_count"); blocks && *blocks != 1)
    throw Error(in.path + ": " + a + "block_count " + std::to_string(*blocks) +
                " is not supported (1)");
  if (in.kind == HeadKind::kEagle) {
    fc_ = load.matrix("eagle.fc.weight", 2 * d, d);  // [d, 2d]
    fc_bias_ = load.vector("eagle.fc.bias", d);      // [1, d]
    block_ = std::make_unique<DecoderBlock>(*device_, s,
                                            load_block(load, "eagle.blk.0.", s, kHeadBlock));
  } else {
    in.predict_offset = positive_int_key_or(f, a + "predict_offset", in.predict_offset);
    if (in.predict_offset != 2)
      throw Error(in.path + ": predict_offset " + std::to_string(in.predict_offset) +
                  " is not supported (2)");
    hnorm_ = load.vector("mtp.hnorm.weight", d);        // [1, d]
    enorm_ = load.vector("mtp.enorm.weight", d);        // [1, d]
    eh_ = load.matrix("mtp.eh_proj.weight", 2 * d, d);  // [d, 2d]
    block_ =
        std::make_unique<DecoderBlock>(*device_, s, load_block(load, "mtp.blk.0.", s, kHeadBlock));
  }
  load.refuse_unread("a one-block " + in.architecture + " head");
}

std::unique_ptr<KvCache> HeadModel::new_cache(int32_t max_rows) {
  if (!has_cache()) throw Error(info_.path + ": a Medusa head keeps no cache");
  if (max_rows <= 0) throw Error("new_cache: max_rows must be > 0");
  if (!kv_pool_)
    kv_pool_ = std::make_shared<KvPool>(*device_, info_.n_layers, info_.block.kv_dim(),
                                        kKvBlockRows, kv_dtype_);
  return std::make_unique<KvCache>(kv_pool_, max_rows);
}

void HeadModel::set_kv_dtype(specd_dtype dtype) {
  if (kv_pool_ && dtype != kv_dtype_)
    throw Error(info_.path + ": the KV cache type is set before the first cache is made");
  if (dtype == SPECD_DTYPE_Q8_0 && info_.block.head_dim % 32 != 0)
    throw UsageError(info_.path + ": a q8_0 KV cache needs a head size that is a multiple of 32 (" +
                     std::to_string(info_.block.head_dim) + " here)");
  kv_dtype_ = dtype;
}

}  // namespace specd
