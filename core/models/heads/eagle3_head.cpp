// EAGLE-3 heads in llama.cpp's layout (general.architecture "eagle3", tensor and key names of
// its src/llama-arch.cpp, written by its convert_hf_to_gguf.py): loading, binding to a target
// by shape and vocabulary, the feature fusion (encode) and the decoder pass.
//
// The pass, per element (feature g at position P, token t = the token after P):
//   u = [attn_norm(embd(t)) | attn_norm_2(g)]            (2d wide)
//   x = g (norm_before_residual: attn_norm_2(g))
//   x += attention over u's q, k, v at RoPE position P;  x += SwiGLU FFN of ffn_norm(x)
//   hidden = x (the children's g);  logits = output(output_norm(x))
// and the draft vocabulary's logits land on the target ids d2t lists (-inf elsewhere), as
// llama.cpp's src/models/eagle3.cpp computes them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/error.hpp"
#include "common/printable.hpp"
#include "models/architecture.hpp"
#include "models/heads/head_model.hpp"
#include "models/hyperparameters.hpp"
#include "models/paged_batch.hpp"
#include "models/weight_loader.hpp"

namespace specd {
namespace {

// The head's decoder block: the llama block with rope frequency factors allowed.
const Architecture kEagle3Block = {
    .name = "eagle3",
    .rope_mode = SPECD_ROPE_NORMAL,
    .rope_freqs = Presence::kOptional,
};

std::string count_of(int64_t n, const char* what) {
  return std::to_string(n) + " " + what;
}

// How a head's tokenizer.ggml.tokens differs from the target's: its size, or (the same size,
// another order or spelling) the first token that differs.
std::string vocabulary_difference(const GgufValue& head, const GgufValue& target) {
  const size_t n = head.array_size(), m = target.array_size();
  if (n != m)
    return "(" + count_of(static_cast<int64_t>(n), "tokens") + ") is not the target's (" +
           count_of(static_cast<int64_t>(m), "tokens") + ")";
  if (head.elem_type == GgufType::kString && target.elem_type == GgufType::kString)
    for (size_t k = 0; k < n; ++k)
      if (head.string_at(k) != target.string_at(k))
        return "differs from the target's at token " + std::to_string(k) + ": '" +
               printable(head.string_at(k)) + "' where the target has '" +
               printable(target.string_at(k)) + "' (both have " +
               count_of(static_cast<int64_t>(n), "tokens") + ")";
  return "is not the target's";
}

}  // namespace

std::vector<int32_t> head_target_layers(const GgufFile& head) {
  const auto arch = head.get_string_opt("general.architecture");
  if (!arch) return {};
  // llama.cpp's converter wrote <arch>.extract_layers before it named the key target_layers.
  std::string key = *arch + ".target_layers";
  const GgufValue* v = head.find(key);
  if (!v && *arch == "eagle3") v = head.find(key = *arch + ".extract_layers");
  if (!v) return {};
  if (v->type != GgufType::kArray || !gguf_is_integer(v->elem_type))
    throw Error(head.path() + ": " + key + " must be an array of integers, not " + v->type_name());
  if (v->array_size() == 0 || v->array_size() > 16)
    throw Error(head.path() + ": " + key + " must list 1 to 16 layers, not " +
                std::to_string(v->array_size()));
  std::vector<int32_t> layers;
  for (size_t k = 0; k < v->array_size(); ++k) {
    const int64_t l = v->int_at(k);
    if (l < 0 || l > 65535)
      throw Error(head.path() + ": " + key + "[" + std::to_string(k) + "] = " + std::to_string(l) +
                  " is not a layer index");
    layers.push_back(static_cast<int32_t>(l));
  }
  return layers;
}

HeadModel::BoundTarget HeadModel::bind_by_shape(const std::string& what,
                                                const std::string& needs_layers,
                                                const std::string& role) {
  const GgufFile& f = head_file_;
  const GgufFile& t = target_file_;
  HeadInfo& in = info_;
  BoundTarget bound;
  bound.both = " (" + role + " " + f.path() + ", target " + t.path() + ")";
  in.name = f.get_string_opt("general.name").value_or("");
  in.target_name = t.get_string_opt("general.name").value_or("");
  bound.keys = std::string(architecture_of(t).name) + ".";
  const GgufTensor& t_embd = t.require_tensor("token_embd.weight");
  if (t_embd.n_dims != 2) throw Error(t.path() + ": token_embd.weight must be 2-D");
  bound.width = static_cast<int32_t>(t_embd.ne[0]);
  bound.vocab = static_cast<int32_t>(t_embd.ne[1]);
  const int32_t t_layers = positive_int_key(t, bound.keys + "block_count");
  in.vocab_size = bound.vocab;
  in.target_layers = head_target_layers(f);
  if (in.target_layers.empty())
    throw Error(f.path() + ": " + needs_layers + ": the target layers whose inputs it fuses");
  for (int32_t l : in.target_layers)
    if (l >= t_layers)
      throw UsageError(what + " reads the input of target layer " + std::to_string(l) +
                       ", but the target has " + count_of(t_layers, "layers") + bound.both);
  const GgufValue* h_tokens = f.find("tokenizer.ggml.tokens");
  const GgufValue* t_tokens = t.find("tokenizer.ggml.tokens");
  if (h_tokens && t_tokens && !(*h_tokens == *t_tokens))
    throw UsageError(what + "'s vocabulary " + vocabulary_difference(*h_tokens, *t_tokens) +
                     bound.both);
  return bound;
}

void HeadModel::read_block_shape(const std::string& a, int32_t d, float eps, bool experts) {
  const GgufFile& f = head_file_;
  BlockShape& s = info_.block;
  s.n_embd = d;
  s.n_head = positive_int_key(f, a + "attention.head_count");
  s.n_head_kv = positive_int_key_or(f, a + "attention.head_count_kv", s.n_head);
  if (s.n_head % s.n_head_kv != 0)
    throw Error(f.path() + ": head counts " + std::to_string(s.n_head) + "/" +
                std::to_string(s.n_head_kv) + " do not divide");
  if (!f.has(a + "attention.key_length") && d % s.n_head != 0)
    throw Error(f.path() + ": " + std::to_string(s.n_head) +
                " heads do not divide embedding_length " + std::to_string(d));
  s.head_dim = positive_int_key_or(f, a + "attention.key_length", d / s.n_head);
  s.n_ff = ffn_length(f, a, experts);
  s.n_rot = positive_int_key_or(f, a + "rope.dimension_count", s.head_dim);
  if (s.n_rot > s.head_dim || s.n_rot % 2 != 0)
    throw Error(f.path() + ": rope.dimension_count must be even and <= the head dim");
  s.rope_base = positive_float_key_or(f, a + "rope.freq_base", 10000.0f);
  const RopeScaling scaling =
      rope_scaling(f, a, positive_int_key_or(f, a + "context_length", 2048));
  s.rope_freq_scale = scaling.freq_scale;
  s.yarn = scaling.yarn;
  s.rms_eps = positive_float_key_or(f, a + "attention.layer_norm_rms_epsilon", eps);
  target_eps_ = s.rms_eps;  // the file's own output_norm
}

void HeadModel::load_eagle3() {
  const GgufFile& f = head_file_;
  const GgufFile& t = target_file_;
  HeadInfo& in = info_;
  const std::string a = "eagle3.";
  const BoundTarget bound = bind_by_shape(
      "the EAGLE-3 head",
      "an EAGLE-3 head needs " + a + "target_layers (or " + a + "extract_layers)", "head");
  const std::string& both = bound.both;
  const std::string& ta = bound.keys;
  const int32_t n_tgt = bound.width, V = bound.vocab;
  const int32_t t_hidden = positive_int_key(f, a + "target_hidden_size");
  if (t_hidden != n_tgt)
    throw UsageError("the EAGLE-3 head was made for a target of width " + std::to_string(t_hidden) +
                     ", the target's is " + std::to_string(n_tgt) + both);

  const int32_t d = positive_int_key(f, a + "embedding_length");
  in.n_embd = d;
  in.input_dim = static_cast<int32_t>(in.target_layers.size()) * n_tgt;
  in.n_ctx = positive_int_key_or(f, a + "context_length",
                                 positive_int_key_or(t, ta + "context_length", 2048));
  in.norm_before_residual = f.get_bool_opt(a + "norm_before_residual").value_or(false);
  if (auto blocks = f.get_u32_opt(a + "block_count"); blocks && *blocks != 1)
    throw Error(f.path() + ": " + a + "block_count " + std::to_string(*blocks) +
                " is not supported (1)");
  read_block_shape(a, d, 1e-5f);
  BlockShape& s = in.block;
  s.attn_in = 2 * d;

  WeightLoader load(f, *device_, buffers_);
  WeightLoader from_target(t, *device_, buffers_);
  fc3_ = load.matrix("fc.weight", in.input_dim, d);  // [d, 3 n_tgt]
  output_norm_ = load.vector("output_norm.weight", d);

  // d2t: the target id of each row of the head's output (absolute ids, as the converter
  // writes them), when its vocabulary is a subset of the target's.
  if (const GgufTensor* m = f.tensor("d2t")) {
    if (m->type != GgmlType::kI64 || m->n_dims != 1)
      throw Error(f.path() + ": d2t must be a 1-D i64 tensor");
    load.mark_read("d2t");
    const auto* ids = static_cast<const int64_t*>(m->data);
    std::unordered_set<int64_t> seen;
    for (int64_t i = 0; i < m->ne[0]; ++i) {
      if (ids[i] < 0 || ids[i] >= V)
        throw UsageError("the EAGLE-3 head maps draft token " + std::to_string(i) +
                         " to target id " + std::to_string(ids[i]) +
                         ", outside the target's vocabulary of " + std::to_string(V) + both);
      if (!seen.insert(ids[i]).second)
        throw Error(f.path() + ": d2t maps two draft tokens to target id " +
                    std::to_string(ids[i]));
      d2t_.push_back(static_cast<int32_t>(ids[i]));
    }
  }
  const bool own_output = f.tensor("output.weight") != nullptr;
  const bool own_embd = f.tensor("token_embd.weight") != nullptr;
  if ((!own_output || !own_embd) && d != n_tgt)
    throw UsageError("the EAGLE-3 head of width " + std::to_string(d) + " borrows the target's " +
                     (own_embd ? "output" : "token_embd") + ", of width " + std::to_string(n_tgt) +
                     both);
  if (own_output) {
    const GgufTensor& o = f.require_tensor("output.weight");
    in.draft_vocab = static_cast<int32_t>(o.n_dims == 2 ? o.ne[1] : 0);
    output_ = load.matrix("output.weight", d, in.draft_vocab);
  } else {
    in.draft_vocab = V;
    output_ = t.tensor("output.weight") ? from_target.matrix("output.weight", d, V)
                                        : from_target.matrix("token_embd.weight", d, V);
  }
  if (d2t_.empty() ? in.draft_vocab != V : static_cast<int32_t>(d2t_.size()) != in.draft_vocab)
    throw Error(f.path() + ": the output has " + count_of(in.draft_vocab, "rows") + " and d2t " +
                count_of(static_cast<int64_t>(d2t_.size()), "entries") + " for a target of " +
                count_of(V, "tokens"));
  tok_embd_ = own_embd ? load.matrix("token_embd.weight", d, V)
                       : from_target.matrix("token_embd.weight", d, V);

  gnorm_ = load.vector("blk.0.attn_norm_2.weight", d);
  BlockWeights w = load_block(load, "blk.0.", s, kEagle3Block);
  if (load.has("rope_freqs.weight")) w.rope_factors = load.vector("rope_freqs.weight", s.n_rot / 2);
  block_ = std::make_unique<DecoderBlock>(*device_, s, w);
  load.refuse_unread("a one-block EAGLE-3 head");
}

void HeadModel::encode(const float* target_features, int32_t m, float* features) {
  if (info_.kind != HeadKind::kEagle3 && info_.kind != HeadKind::kDflash &&
      info_.kind != HeadKind::kNextn)
    throw Error(info_.path + ": only EAGLE-3, DFlash and MTP-layer heads fuse target features");
  if (m <= 0) throw Error("encode: no rows");
  const int64_t din = info_.input_dim, d = info_.n_embd;
  // Pieces of invariant rows: a row's bits do not depend on how many were fused with it,
  // and a long prompt's rows pass through buffers of one piece.
  const int64_t piece = std::max<uint32_t>(device_->info().invariant_max_rows, 1);
  if (!enc_) {
    enc_ = device_->alloc(static_cast<uint64_t>(piece) * din * 4);
    enc_out_ = device_->alloc(static_cast<uint64_t>(piece) * d * 4);
  }
  for (int64_t r = 0; r < m; r += piece) {
    const int64_t p = std::min<int64_t>(piece, m - r);
    enc_.upload(target_features + r * din, static_cast<uint64_t>(p) * din * 4);
    const View out = enc_out_.view(SPECD_DTYPE_F32, p, d);
    if (info_.kind == HeadKind::kNextn)  // h = output_norm(hidden), as the target's LM head sees
      device_->rms_norm(enc_.view(SPECD_DTYPE_F32, p, din), output_norm_, target_eps_, out);
    else
      device_->matmul(enc_.view(SPECD_DTYPE_F32, p, din), fc3_, out);
    if (info_.kind == HeadKind::kDflash)
      device_->rms_norm(out, enc_norm_, info_.block.rms_eps, out);
    enc_out_.download(features + r * d, static_cast<uint64_t>(p) * d * 4);
  }
}

void HeadModel::forward_eagle3(std::span<const Entry> entries, int64_t piece) {
  int64_t M = 0;
  const std::vector<PagedRows> rows = paged_rows(entries, M);
  PagedBatchInputs inputs(rows);  // keeps a view of rows
  upload_pass(inputs, M);

  const int64_t d = info_.n_embd, V = info_.vocab_size, Vd = info_.draft_vocab;
  const float eps = info_.block.rms_eps;
  Device& dev = *device_;
  // x = the feature rows [M, d], uploaded once; u = [embedding | feature] rows [M, 2d] is
  // built on the device from the token ids and x.
  {
    int64_t row0 = 0;
    for (const Entry& e : entries) {
      x_.upload(e.features, static_cast<uint64_t>(e.m) * d * 4,
                static_cast<uint64_t>(row0) * d * 4);
      row0 += e.m;
    }
  }
  const View uu = u_.view(SPECD_DTYPE_F32, M, 2 * d);                // [M, 2d]
  const View ue = u_.view(SPECD_DTYPE_F32, M, d, 0, 2 * d * 4);      // [M, d] embedding half
  const View uf = u_.view(SPECD_DTYPE_F32, M, d, d * 4, 2 * d * 4);  // [M, d] feature half
  const View x = x_.view(SPECD_DTYPE_F32, M, d);
  const View tokens = inputs.tokens(ints_);
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    dev.get_rows(tok_embd_, tokens.slice_cols(r, p), ue.slice_rows(r, p));
    dev.rms_norm(ue.slice_rows(r, p), block_->weights().attn_norm, eps, ue.slice_rows(r, p));
    dev.rms_norm(x.slice_rows(r, p), gnorm_, eps, uf.slice_rows(r, p));
    if (info_.norm_before_residual)
      dev.rms_norm(x.slice_rows(r, p), gnorm_, eps, x.slice_rows(r, p));
  }
  block_and_output(x, inputs, Vd, piece, &uu);
  int64_t row0 = 0, logit0 = 0;
  for (const Entry& e : entries) {
    if (e.hidden)
      x_.download(e.hidden, static_cast<uint64_t>(e.m) * d * 4,
                  static_cast<uint64_t>(row0) * d * 4);
    const int32_t wanted = e.m - e.first_logit_row;
    const uint64_t count = static_cast<uint64_t>(wanted) * Vd;
    if (count > 0 && d2t_.empty()) {
      logits_.download(e.logits, count * 4, static_cast<uint64_t>(logit0) * Vd * 4);
      check_finite(e.logits, count);
    } else if (count > 0) {
      draft_logits_.resize(count);
      logits_.download(draft_logits_.data(), count * 4, static_cast<uint64_t>(logit0) * Vd * 4);
      check_finite(draft_logits_.data(), count);
      std::fill_n(e.logits, static_cast<size_t>(wanted) * V,
                  -std::numeric_limits<float>::infinity());
      for (int32_t i = 0; i < wanted; ++i)
        for (int64_t k = 0; k < Vd; ++k)
          e.logits[i * V + d2t_[k]] = draft_logits_[static_cast<size_t>(i * Vd + k)];
    }
    row0 += e.m;
    logit0 += wanted;
  }
  inputs.finish();
}

}  // namespace specd
