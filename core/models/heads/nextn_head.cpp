// MTP layers in llama.cpp's layout (src/models/qwen35.cpp and qwen35moe.cpp, graph_mtp): the
// blk.L.nextn.* layer after a hybrid model's trunk (L = block_count - nextn_predict_layers),
// read from the target file itself or from a separate file of the same layout
// (convert_hf_to_gguf.py --mtp-only). qwen35moe's layer has the trunk's experts as its FFN.
//
//   encode:  h = output_norm(hidden)                                    the target's feature
//   element at position p (token x_p, the feature h of position p - 1; zeros before the first):
//     x   = eh_proj · [enorm(embed(x_p)) | hnorm(h)]
//     x   = the layer's gated attention block (qwen35's) over the MTP layer's own KV cache
//     h_p = shared_head_norm(x)                                         the next element's h
//     logits = shared_head_head · h_p                                   predicts x_{p+1}
// shared_head_norm, shared_head_head and embed_tokens fall back to the model's output_norm,
// output (or token_embd) and token_embd, as llama.cpp's do.
#include <algorithm>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "models/architectures/architectures.hpp"
#include "models/heads/head_model.hpp"
#include "models/hyperparameters.hpp"
#include "models/llama_model.hpp"
#include "models/paged_batch.hpp"
#include "models/weight_loader.hpp"

namespace specd {

void HeadModel::load_nextn() {
  const GgufFile& f = head_file_;
  const GgufFile& t = target_file_;
  HeadInfo& in = info_;
  // qwen35 or qwen35moe: the file's and the target's architecture, which must be one.
  const Architecture& arch = architecture_of(f);
  const std::string a = std::string(arch.name) + ".";
  const std::string both = " (MTP layers " + f.path() + ", target " + t.path() + ")";
  in.name = f.get_string_opt("general.name").value_or("");
  in.target_name = t.get_string_opt("general.name").value_or("");
  if (!arch.hybrid || &architecture_of(t) != &arch)
    throw UsageError("MTP layers of a " + std::string(arch.name) + " file draft for a target of " +
                     "the same hybrid architecture, not '" + std::string(architecture_of(t).name) +
                     "'" + both);
  const int32_t nextn = positive_int_key(f, a + "nextn_predict_layers");
  const int32_t blocks = positive_int_key(f, a + "block_count");
  if (nextn != 1)
    throw Error(f.path() + ": " + a + "nextn_predict_layers " + std::to_string(nextn) +
                " is not supported (" + arch.name + " files have one MTP layer)");
  if (nextn >= blocks)
    throw Error(f.path() + ": " + a + "nextn_predict_layers leaves no trunk layers");
  const int32_t layer = blocks - nextn;
  const int32_t d = positive_int_key(f, a + "embedding_length");
  const int32_t t_d = positive_int_key(t, a + "embedding_length");
  if (d != t_d)
    throw UsageError("the MTP layers have width " + std::to_string(d) + ", the target " +
                     std::to_string(t_d) + both);
  const GgufValue* h_tokens = f.find("tokenizer.ggml.tokens");
  const GgufValue* t_tokens = t.find("tokenizer.ggml.tokens");
  if (h_tokens && t_tokens && !(*h_tokens == *t_tokens))
    throw UsageError("the MTP layers' vocabulary is not the target's" + both);
  in.n_embd = d;
  in.input_dim = d;
  in.n_ctx = positive_int_key_or(t, a + "context_length", 2048);
  read_block_shape(a, d, 1e-6f, arch.experts != ExpertRouting::kNone);
  BlockShape& s = in.block;
  s.rope_mode = arch.rope_mode;
  s.gated_attention = true;
  if (arch.experts != ExpertRouting::kNone) s.moe = read_moe_shape(f, a, arch, s.n_ff);
  target_eps_ = positive_float_key_or(t, a + "attention.layer_norm_rms_epsilon", 1e-6f);

  WeightLoader load(f, *device_, buffers_);
  WeightLoader from_target(t, *device_, buffers_);
  // The model's own tensors: from the MTP file when it has them, else from the target.
  auto model_matrix = [&](const char* name, int64_t cols, int64_t rows) {
    return f.tensor(name) ? load.matrix(name, cols, rows) : from_target.matrix(name, cols, rows);
  };
  auto model_vector = [&](const char* name, int64_t n) {
    return f.tensor(name) ? load.vector(name, n) : from_target.vector(name, n);
  };
  const GgufTensor& embd =
      (f.tensor("token_embd.weight") ? f : t).require_tensor("token_embd.weight");
  if (embd.n_dims != 2 || embd.ne[0] != d)
    throw Error(f.path() + ": token_embd.weight must be [" + std::to_string(d) + ", vocab]");
  const int32_t V = static_cast<int32_t>(embd.ne[1]);
  in.vocab_size = V;
  const std::string p = "blk." + std::to_string(layer) + ".";
  const std::string n = p + "nextn.";
  tok_embd_ = f.tensor(n + "embed_tokens.weight") ? load.matrix(n + "embed_tokens.weight", d, V)
                                                  : model_matrix("token_embd.weight", d, V);
  const View model_norm = model_vector("output_norm.weight", d);
  output_norm_ = model_norm;  // what encode applies to the target's features
  head_norm_ = f.tensor(n + "shared_head_norm.weight")
                   ? load.vector(n + "shared_head_norm.weight", d)
                   : model_norm;
  if (f.tensor(n + "shared_head_head.weight"))
    output_ = load.matrix(n + "shared_head_head.weight", d, V);
  else if (f.tensor("output.weight") || t.tensor("output.weight"))
    output_ = model_matrix("output.weight", d, V);
  else
    output_ = tok_embd_;
  eh_ = load.matrix(n + "eh_proj.weight", 2 * d, d);  // [d, 2d]: embedding half, then h half
  enorm_ = load.vector(n + "enorm.weight", d);
  hnorm_ = load.vector(n + "hnorm.weight", d);
  block_ = std::make_unique<DecoderBlock>(*device_, s, load_block(load, p, s, arch));
  // Every tensor of the MTP layer must be one this reads (a feature it lacks is refused).
  for (const GgufTensor& tensor : f.tensors())
    if (is_mtp_tensor(tensor.name, layer) && !load.was_read(tensor.name))
      throw Error(f.path() + ": tensor '" + tensor.name + "' of the MTP layer is not used by " +
                  "specd's " + arch.name + " MTP (a feature it does not support)");
}

void HeadModel::forward_nextn(std::span<const Entry> entries, int64_t piece) {
  int64_t M = 0;
  const std::vector<PagedRows> rows = paged_rows(entries, M);
  PagedBatchInputs inputs(rows);  // keeps a view of rows
  upload_pass(inputs, M);
  const int64_t d = info_.n_embd, V = info_.vocab_size;
  const float eps = info_.block.rms_eps;
  Device& dev = *device_;
  // u = [embedding | feature] rows [M, 2d]
  {
    std::vector<float> u(static_cast<size_t>(M) * 2 * d, 0.0f);
    int64_t row0 = 0;
    for (const Entry& e : entries)
      for (int32_t i = 0; i < e.m; ++i, ++row0)
        std::copy_n(e.features + i * d, d, u.data() + row0 * 2 * d + d);
    u_.upload(u.data(), u.size() * 4);
  }
  const View uu = u_.view(SPECD_DTYPE_F32, M, 2 * d);                // [M, 2d]
  const View ue = u_.view(SPECD_DTYPE_F32, M, d, 0, 2 * d * 4);      // [M, d] embedding half
  const View uf = u_.view(SPECD_DTYPE_F32, M, d, d * 4, 2 * d * 4);  // [M, d] feature half
  const View x = x_.view(SPECD_DTYPE_F32, M, d);
  const View tokens = inputs.tokens(ints_);
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    dev.get_rows(tok_embd_, tokens.slice_cols(r, p), ue.slice_rows(r, p));
    dev.rms_norm(ue.slice_rows(r, p), enorm_, eps, ue.slice_rows(r, p));
    dev.rms_norm(uf.slice_rows(r, p), hnorm_, eps, uf.slice_rows(r, p));
    dev.matmul(uu.slice_rows(r, p), eh_, x.slice_rows(r, p));
  }
  block_scratch_.ensure(*device_, info_.block, M);
  block_->run(x, inputs.views(ints_), kv_pool_->k(0), kv_pool_->v(0), piece, block_scratch_);
  // h = shared_head_norm(x) for every row (the next elements' features), the LM head for the
  // rows whose logits are wanted.
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    dev.rms_norm(x.slice_rows(r, p), head_norm_, eps, x.slice_rows(r, p));
  }
  output_logits(x, V, piece, nullptr);
  download_outputs(entries, V);
  inputs.finish();
}

}  // namespace specd
