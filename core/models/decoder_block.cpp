#include "models/decoder_block.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace specd {
namespace {

// RMSNorm over each head of v ([m, heads * hd] f32) in place. Packed rows are seen as
// [m * heads, hd] for one call; padded ones (a KV cache row, kv_layout.hpp) take one call per
// head. Either way each (row, head) is normalized on its own, so the bits are the same.
void norm_heads(Device& dev, const View& v, int64_t heads, const View& weight, float eps) {
  specd_view r = *v.raw();
  if (r.cols % heads != 0) throw Error("decoder block: a row does not split into whole heads");
  const int64_t hd = r.cols / heads;
  if (r.row_stride == r.cols * 4) {
    r.rows *= heads;
    r.cols = hd;
    r.row_stride = hd * 4;
    const View all(r);
    dev.rms_norm(all, weight, eps, all);
    return;
  }
  for (int64_t h = 0; h < heads; ++h) {
    specd_view s = r;
    s.offset += static_cast<uint64_t>(h * hd) * 4;
    s.cols = hd;
    const View head(s);
    dev.rms_norm(head, weight, eps, head);
  }
}

// The heads of packed rows v [m, heads * width] (or of [m, heads * stride] rows, each head's
// values at `offset` of its stride) as one view [m * heads, width].
View as_heads(const View& v, int64_t heads, int64_t width, int64_t stride, int64_t offset = 0) {
  specd_view r = *v.raw();
  if (r.row_stride != r.cols * 4 || r.cols != heads * stride)
    throw Error("decoder block: rows do not split into packed heads");
  r.offset += static_cast<uint64_t>(offset) * 4;
  r.rows *= heads;
  r.cols = width;
  r.row_stride = stride * 4;
  return View(r);
}

specd_rope_params rope_params(const BlockShape& s, const BlockWeights& w, int32_t heads) {
  specd_rope_params r{};
  r.struct_size = sizeof(specd_rope_params);
  r.n_head = static_cast<uint32_t>(heads);
  r.head_dim = static_cast<uint32_t>(s.head_dim);
  r.n_rot = static_cast<uint32_t>(s.n_rot);
  r.base = s.rope_base;
  r.mode = s.rope_mode;
  r.freq_scale = s.rope_freq_scale;
  r.freq_factors = w.rope_factors.empty() ? nullptr : w.rope_factors.raw();
  r.ext_factor = s.yarn.ext_factor;
  r.attn_factor = s.yarn.attn_factor;
  r.beta_fast = s.yarn.beta_fast;
  r.beta_slow = s.yarn.beta_slow;
  r.n_ctx_orig = static_cast<uint32_t>(s.yarn.n_ctx_orig);
  return r;
}

specd_attention_params attention_params(const BlockShape& s, const BlockWeights& w) {
  specd_attention_params p{};
  p.struct_size = sizeof(specd_attention_params);
  p.n_head = static_cast<uint32_t>(s.n_head);
  p.n_head_kv = static_cast<uint32_t>(s.n_head_kv);
  p.head_dim = static_cast<uint32_t>(s.head_dim);
  p.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  p.window = static_cast<uint32_t>(s.window);
  p.sinks = w.sinks.empty() ? nullptr : w.sinks.raw();
  return p;
}

}  // namespace

namespace {

// The FFN norm and the FFN of `shape`: a dense SwiGLU, or with shape.moe active the router,
// the experts (their biases) and the shared expert.
void load_ffn(WeightLoader& loader, const std::string& p, const BlockShape& s,
              const Architecture& arch, BlockWeights& w) {
  const int64_t d = s.n_embd, F = s.n_ff;
  w.ffn_norm = loader.vector(
      p + (arch.post_attention_norm ? "post_attention_norm.weight" : "ffn_norm.weight"),
      d);  // [1, d]
  if (s.moe.active()) {
    const int64_t E = s.moe.n_expert, Fe = s.moe.n_ff, Fs = s.moe.n_ff_shared;
    MoeWeights& x = w.experts;
    x.router = loader.matrix(p + "ffn_gate_inp.weight", d, E);  // [E, d]
    if (!s.moe.biases && loader.has(p + "ffn_gate_up_exps.weight")) {
      // one tensor: each expert's gate rows, then its up rows (llama.cpp's gate_up_exps)
      x.gate = loader.experts(p + "ffn_gate_up_exps.weight", d, 2 * Fe, E);  // [E 2Fe, d]
      x.up = x.gate.slice_rows(Fe, (2 * E - 1) * Fe);
      x.expert_stride = 2 * Fe;
    } else {
      x.gate = loader.experts(p + "ffn_gate_exps.weight", d, Fe, E);  // [E Fe, d]
      x.up = loader.experts(p + "ffn_up_exps.weight", d, Fe, E);      // [E Fe, d]
    }
    x.down = loader.experts(p + "ffn_down_exps.weight", Fe, d, E);  // [E d, Fe]
    if (s.moe.biases) {
      x.router_bias = loader.vector(p + "ffn_gate_inp.bias", E);  // [1, E]
      const char* what = "expert biases";
      x.gate_bias = loader.small_matrix(p + "ffn_gate_exps.bias", Fe, E, what);  // [E, Fe]
      x.up_bias = loader.small_matrix(p + "ffn_up_exps.bias", Fe, E, what);      // [E, Fe]
      x.down_bias = loader.small_matrix(p + "ffn_down_exps.bias", d, E, what);   // [E, d]
    }
    if (Fs > 0) {
      x.shared_gate_inp = loader.vector(p + "ffn_gate_inp_shexp.weight", d);  // [1, d]
      x.shared_gate = loader.matrix(p + "ffn_gate_shexp.weight", d, Fs);      // [Fs, d]
      x.shared_up = loader.matrix(p + "ffn_up_shexp.weight", d, Fs);          // [Fs, d]
      x.shared_down = loader.matrix(p + "ffn_down_shexp.weight", Fs, d);      // [d, Fs]
    }
    return;
  }
  if (arch.fused_gate_up) {
    const View gate_up = loader.matrix(p + "ffn_up.weight", d, 2 * F);  // [2F, d]: gate, up
    w.w_gate = gate_up.slice_rows(0, F);
    w.w_up = gate_up.slice_rows(F, F);
  } else {
    w.w_gate = loader.matrix(p + "ffn_gate.weight", d, F);  // [F, d]
    w.w_up = loader.matrix(p + "ffn_up.weight", d, F);      // [F, d]
  }
  w.w_down = loader.matrix(p + "ffn_down.weight", F, d);  // [d, F]
}

}  // namespace

BlockWeights load_block(WeightLoader& loader, const std::string& p, const BlockShape& s,
                        const Architecture& arch) {
  const int64_t d = s.n_embd, qd = s.q_dim(), kvd = s.kv_dim(), hd = s.head_dim;
  const int64_t in = s.attn_in_dim();
  BlockWeights w;
  w.attn_norm = loader.vector(p + "attn_norm.weight", d);  // [1, d]
  const bool fused_qkv =
      arch.fused_qkv == Presence::kRequired ||
      (arch.fused_qkv == Presence::kOptional && loader.has(p + "attn_qkv.weight"));
  if (fused_qkv) {
    const View qkv = loader.matrix(p + "attn_qkv.weight", in, qd + 2 * kvd);  // [q+2kv, in]
    w.wq = qkv.slice_rows(0, qd);
    w.wk = qkv.slice_rows(qd, kvd);
    w.wv = qkv.slice_rows(qd + kvd, kvd);
  } else {
    // [H*hd, in]; gated: [2 H*hd, in], each head's q rows then its gate rows
    w.wq = loader.matrix(p + "attn_q.weight", in, s.gated_attention ? 2 * qd : qd);
    w.wk = loader.matrix(p + "attn_k.weight", in, kvd);  // [Hkv*hd, in]
    w.wv = loader.matrix(p + "attn_v.weight", in, kvd);  // [Hkv*hd, in]
  }
  const bool bias = arch.qkv_bias == Presence::kRequired ||
                    (arch.qkv_bias == Presence::kOptional && loader.has(p + "attn_q.bias"));
  if (bias) {
    w.bq = loader.vector(p + "attn_q.bias", qd);   // [1, H*hd]
    w.bk = loader.vector(p + "attn_k.bias", kvd);  // [1, Hkv*hd]
    w.bv = loader.vector(p + "attn_v.bias", kvd);  // [1, Hkv*hd]
  }
  const bool qk_norm =
      arch.qk_norm == Presence::kRequired ||
      (arch.qk_norm == Presence::kOptional && loader.has(p + "attn_q_norm.weight"));
  if (qk_norm) {
    w.q_norm = loader.vector(p + "attn_q_norm.weight", hd);  // [1, hd]
    w.k_norm = loader.vector(p + "attn_k_norm.weight", hd);  // [1, hd]
  }
  w.wo = loader.matrix(p + "attn_output.weight", qd, d);  // [d, H*hd]
  auto present = [&](Presence presence, const std::string& name) {
    return presence == Presence::kRequired ||
           (presence == Presence::kOptional && loader.has(p + name));
  };
  if (present(arch.output_bias, "attn_output.bias"))
    w.bo = loader.vector(p + "attn_output.bias", d);  // [1, d]
  if (present(arch.attention_sinks, "attn_sinks.weight"))
    w.sinks = loader.vector(p + "attn_sinks.weight", s.n_head);  // [1, H]
  load_ffn(loader, p, s, arch, w);
  return w;
}

BlockWeights load_delta_block(WeightLoader& loader, const std::string& p, const BlockShape& s,
                              const Architecture& arch) {
  const int64_t d = s.n_embd, C = s.dn_channels(), vd = s.dn_value_dim();
  const int64_t hv = s.dn_value_heads;
  BlockWeights w;
  w.attn_norm = loader.vector(p + "attn_norm.weight", d);
  DeltaNetWeights& n = w.dn;
  n.qkv = loader.matrix(p + "attn_qkv.weight", d, C);
  n.gate = loader.matrix(p + "attn_gate.weight", d, vd);
  n.beta = loader.matrix(p + "ssm_beta.weight", d, hv);
  n.alpha = loader.matrix(p + "ssm_alpha.weight", d, hv);
  n.conv = loader.small_matrix(p + "ssm_conv1d.weight", s.dn_conv, C, "convolution kernels");
  n.dt_bias = loader.vector(p + "ssm_dt.bias", hv);
  n.a = loader.vector(p + "ssm_a", hv);
  n.norm = loader.vector(p + "ssm_norm.weight", s.dn_head_dim);
  n.out = loader.matrix(p + "ssm_out.weight", vd, d);
  load_ffn(loader, p, s, arch, w);
  return w;
}

bool BlockWeights::needs_abi_0_2(const BlockShape& s, std::string* what) const {
  std::string f;
  auto note = [&](bool used, const char* feature) {
    if (used) f += (f.empty() ? "" : ", ") + std::string(feature);
  };
  note(s.rope_mode != SPECD_ROPE_NORMAL, "neox rope");
  note(s.rope_freq_scale != 1.0f, "linear rope scaling");
  note(!rope_factors.empty(), "rope frequency factors");
  note(!bq.empty(), "q/k/v biases");
  if (what) *what = f;
  return !f.empty();
}

bool BlockWeights::needs_abi_0_8(const BlockShape& s, std::string* what) const {
  std::string f;
  auto note = [&](bool used, const char* feature) {
    if (used) f += (f.empty() ? "" : ", ") + std::string(feature);
  };
  note(s.window > 0, "sliding-window attention");
  note(!sinks.empty(), "attention sinks");
  note(s.yarn.ext_factor != 0.0f, "YaRN rope scaling");
  note(s.moe.activation == ExpertActivation::kSwigluOai, "the clamped SwiGLU (swiglu_oai)");
  if (what) *what = f;
  return !f.empty();
}

void BlockScratch::ensure(Device& device, const BlockShape& shape, int64_t m) {
  if (m <= rows_) return;
  const int64_t d = shape.n_embd, F = shape.n_ff, qd = shape.q_dim(), kvd = shape.kv_dim();
  h = device.alloc(m * d * 4);
  q = device.alloc(m * qd * 4);
  attn = device.alloc(m * qd * 4);
  if (!shape.moe.active()) {  // a dense FFN's (a mixture of experts' are the MoE scratch's)
    gate = device.alloc(m * F * 4);
    up = device.alloc(m * F * 4);
  }
  k = device.alloc(m * kvd * 4);
  v = device.alloc(m * kvd * 4);
  if (shape.gated_attention) qg = device.alloc(m * 2 * qd * 4);
  if (shape.moe.active()) moe.ensure(device, shape.moe, d, m);
  if (shape.dn_value_heads > 0) {
    qkv = device.alloc(m * shape.dn_channels() * 4);
    z = device.alloc(m * shape.dn_value_dim() * 4);
    o = device.alloc(m * shape.dn_value_dim() * 4);
    alpha = device.alloc(m * shape.dn_value_heads * 4);
    beta = device.alloc(m * shape.dn_value_heads * 4);
  }
  rows_ = m;
}

void DecoderBlock::run(const View& x, const PagedBatch& b, const View& k_pool, const View& v_pool,
                       int64_t piece, BlockScratch& scratch, const View* attn_input) const {
  const int64_t M = x.rows();
  if (scratch.rows() < M) throw Error("decoder block: the scratch holds fewer than M rows");
  if (piece < 1) throw Error("decoder block: a pass needs pieces of at least 1 row");
  if (attn_input && (attn_input->rows() != M || attn_input->cols() != shape_.attn_in_dim()))
    throw Error("decoder block: the attention input is not [M, attn_in_dim]");
  const BlockShape& s = shape_;
  const int64_t d = s.n_embd, kvd = s.kv_dim();
  const View h_all = scratch.h.view(SPECD_DTYPE_F32, M, d);             // [M, d]
  const View q_all = scratch.q.view(SPECD_DTYPE_F32, M, s.q_dim());     // [M, H*hd]
  const View a_all = scratch.attn.view(SPECD_DTYPE_F32, M, s.q_dim());  // [M, H*hd]
  const bool dense = !s.moe.active();
  const View g_all = dense ? scratch.gate.view(SPECD_DTYPE_F32, M, s.n_ff) : View();  // [M, F]
  const View u_all = dense ? scratch.up.view(SPECD_DTYPE_F32, M, s.n_ff) : View();    // [M, F]
  const View k_all = scratch.k.view(SPECD_DTYPE_F32, M, kvd);                         // [M, Hkv*hd]
  const View v_all = scratch.v.view(SPECD_DTYPE_F32, M, kvd);                         // [M, Hkv*hd]
  const View qg_all = s.gated_attention ? scratch.qg.view(SPECD_DTYPE_F32, M, 2 * s.q_dim())
                                        : View();  // [M, 2 H*hd]
  Device& dev = *device_;
  // Before attention, piece by piece.
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    const View in = attn_input ? attn_input->slice_rows(r, p) : View();
    project(x.slice_rows(r, p), attn_input ? &in : nullptr, b.positions.slice_cols(r, p),
            h_all.slice_rows(r, p), q_all.slice_rows(r, p), k_all.slice_rows(r, p),
            v_all.slice_rows(r, p), s.gated_attention ? qg_all.slice_rows(r, p) : View());
  }
  // The new K and V rows into their sequences' blocks, then attention over every row at once.
  dev.set_rows(k_all, b.write_rows, k_pool);
  dev.set_rows(v_all, b.write_rows, v_pool);
  dev.attention_paged(q_all, k_pool, v_pool, b.prefix_len, b.extra_begin,
                      b.has_extra() ? &b.extra_slots : nullptr, b.block_rows, b.block_table,
                      b.table_begin, attention_params(s, w_), a_all);
  // After attention, piece by piece.
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    const View a = a_all.slice_rows(r, p);
    if (s.gated_attention) {  // attn *= sigmoid(gate), each head by its own gate half
      const View heads = as_heads(a, s.n_head, s.head_dim, s.head_dim);
      dev.mul_sigmoid(
          heads,
          as_heads(qg_all.slice_rows(r, p), s.n_head, s.head_dim, 2 * s.head_dim, s.head_dim),
          heads);
    }
    finish(x.slice_rows(r, p), a, w_.wo, h_all.slice_rows(r, p),
           dense ? g_all.slice_rows(r, p) : View(), dense ? u_all.slice_rows(r, p) : View(),
           scratch.moe);
  }
}

namespace {

specd_delta_net_params delta_params(const BlockShape& s) {
  specd_delta_net_params params{};
  params.struct_size = sizeof(params);
  params.n_key_heads = static_cast<uint32_t>(s.dn_key_heads);
  params.n_value_heads = static_cast<uint32_t>(s.dn_value_heads);
  params.head_dim = static_cast<uint32_t>(s.dn_head_dim);
  params.conv_kernel = static_cast<uint32_t>(s.dn_conv);
  params.eps = s.rms_eps;
  return params;
}

}  // namespace

void DecoderBlock::replay_delta(const DeltaState& state, const View& state_in,
                                const View& state_out, BlockScratch& scratch) const {
  const int64_t rows = state.store_qkv.rows();
  if (scratch.rows() < rows)
    throw Error("decoder block: the scratch holds fewer rows than a replay");
  const View o = scratch.o.view(SPECD_DTYPE_F32, rows, shape_.dn_value_dim());
  device_->gated_delta_net(state.store_qkv, state.store_alpha, state.store_beta, w_.dn.conv,
                           w_.dn.dt_bias, w_.dn.a, state.conv, state.ssm, state_in, state_out,
                           delta_params(shape_), o);
}

void DecoderBlock::run_delta(const View& x, const PagedBatch& b, const DeltaState& state,
                             int64_t piece, BlockScratch& scratch) const {
  const int64_t M = x.rows();
  if (scratch.rows() < M) throw Error("decoder block: the scratch holds fewer than M rows");
  if (piece < 1) throw Error("decoder block: a pass needs pieces of at least 1 row");
  if (!w_.recurrent()) throw Error("decoder block: run_delta on an attention layer");
  if (b.state_in.empty()) throw Error("decoder block: a recurrent layer's pass has no state slots");
  const BlockShape& s = shape_;
  const DeltaNetWeights& n = w_.dn;
  const int64_t d = s.n_embd, vd = s.dn_value_dim(), hv = s.dn_value_heads, S = s.dn_head_dim;
  const View h_all = scratch.h.view(SPECD_DTYPE_F32, M, d);
  const View qkv_all = scratch.qkv.view(SPECD_DTYPE_F32, M, s.dn_channels());
  const View z_all = scratch.z.view(SPECD_DTYPE_F32, M, vd);
  const View o_all = scratch.o.view(SPECD_DTYPE_F32, M, vd);
  const View alpha_all = scratch.alpha.view(SPECD_DTYPE_F32, M, hv);
  const View beta_all = scratch.beta.view(SPECD_DTYPE_F32, M, hv);
  const bool dense = !s.moe.active();
  const View g_all = dense ? scratch.gate.view(SPECD_DTYPE_F32, M, s.n_ff) : View();
  const View u_all = dense ? scratch.up.view(SPECD_DTYPE_F32, M, s.n_ff) : View();
  Device& dev = *device_;
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    const View h = h_all.slice_rows(r, p);
    dev.rms_norm(x.slice_rows(r, p), w_.attn_norm, s.rms_eps, h);
    dev.matmul(h, n.qkv, qkv_all.slice_rows(r, p));
    dev.matmul(h, n.gate, z_all.slice_rows(r, p));
    dev.matmul(h, n.beta, beta_all.slice_rows(r, p));
    dev.matmul(h, n.alpha, alpha_all.slice_rows(r, p));
  }
  dev.gated_delta_net(qkv_all, alpha_all, beta_all, n.conv, n.dt_bias, n.a, state.conv, state.ssm,
                      b.state_in, b.state_out, delta_params(s), o_all);
  if (!b.replay_rows.empty()) {  // the rows a commit may run again
    dev.copy_rows(qkv_all, b.replay_rows, state.store_qkv);
    dev.copy_rows(alpha_all, b.replay_rows, state.store_alpha);
    dev.copy_rows(beta_all, b.replay_rows, state.store_beta);
  }
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    // The output gate: RMSNorm of each value head, times silu(z).
    const View o = o_all.slice_rows(r, p);
    const View heads = as_heads(o, hv, S, S);
    dev.rms_norm(heads, n.norm, s.rms_eps, heads);
    dev.swiglu(z_all.slice_rows(r, p), o, o);
    finish(x.slice_rows(r, p), o, n.out, h_all.slice_rows(r, p),
           dense ? g_all.slice_rows(r, p) : View(), dense ? u_all.slice_rows(r, p) : View(),
           scratch.moe);
  }
}

void DecoderBlock::write_kv(const View& input, const PagedBatch& b, const View& k_pool,
                            const View& v_pool, int64_t piece, BlockScratch& scratch) const {
  const int64_t M = input.rows();
  if (scratch.rows() < M) throw Error("decoder block: the scratch holds fewer than M rows");
  if (piece < 1) throw Error("decoder block: a pass needs pieces of at least 1 row");
  if (input.cols() != shape_.attn_in_dim())
    throw Error("decoder block: the K/V input is not [M, attn_in_dim]");
  const BlockShape& s = shape_;
  const View h_all = scratch.h.view(SPECD_DTYPE_F32, M, s.n_embd);
  const View q_all = scratch.q.view(SPECD_DTYPE_F32, M, s.q_dim());
  const View k_all = scratch.k.view(SPECD_DTYPE_F32, M, s.kv_dim());
  const View v_all = scratch.v.view(SPECD_DTYPE_F32, M, s.kv_dim());
  for (int64_t r = 0; r < M; r += piece) {
    const int64_t p = std::min(piece, M - r);
    const View in = input.slice_rows(r, p);
    project(in, &in, b.positions.slice_cols(r, p), h_all.slice_rows(r, p), q_all.slice_rows(r, p),
            k_all.slice_rows(r, p), v_all.slice_rows(r, p),
            shape_.gated_attention
                ? scratch.qg.view(SPECD_DTYPE_F32, M, 2 * s.q_dim()).slice_rows(r, p)
                : View());
  }
  device_->set_rows(k_all, b.write_rows, k_pool);
  device_->set_rows(v_all, b.write_rows, v_pool);
}

void DecoderBlock::project(const View& x, const View* in, const View& positions, const View& h,
                           const View& q, const View& k, const View& v, const View& qg) const {
  const BlockShape& s = shape_;
  Device& dev = *device_;
  if (!in) dev.rms_norm(x, w_.attn_norm, s.rms_eps, h);
  const View& a = in ? *in : h;
  if (s.gated_attention) {
    // [q_h | gate_h] per head; q's halves normed per head straight into q (the gate stays).
    dev.matmul(a, w_.wq, qg);
    dev.matmul(a, w_.wk, k);
    dev.matmul(a, w_.wv, v);
    const View q_heads = as_heads(q, s.n_head, s.head_dim, s.head_dim);
    dev.rms_norm(as_heads(qg, s.n_head, s.head_dim, 2 * s.head_dim), w_.q_norm, s.rms_eps, q_heads);
    norm_heads(dev, k, s.n_head_kv, w_.k_norm, s.rms_eps);
    dev.rope(q, positions, rope_params(s, w_, s.n_head));
    dev.rope(k, positions, rope_params(s, w_, s.n_head_kv));
    return;
  }
  dev.matmul(a, w_.wq, q);
  dev.matmul(a, w_.wk, k);
  dev.matmul(a, w_.wv, v);
  if (!w_.bq.empty()) {  // qwen2: one bias row added to every row
    dev.add(q, w_.bq, q);
    dev.add(k, w_.bk, k);
    dev.add(v, w_.bv, v);
  }
  if (!w_.q_norm.empty()) {  // qwen3: RMSNorm over each head of q and k
    norm_heads(dev, q, s.n_head, w_.q_norm, s.rms_eps);
    norm_heads(dev, k, s.n_head_kv, w_.k_norm, s.rms_eps);
  }
  dev.rope(q, positions, rope_params(s, w_, s.n_head));
  dev.rope(k, positions, rope_params(s, w_, s.n_head_kv));
}

void DecoderBlock::finish(const View& x, const View& mixed, const View& w_out, const View& h,
                          const View& gate, const View& up, MoeScratch& moe) const {
  const BlockShape& s = shape_;
  Device& dev = *device_;
  dev.matmul(mixed, w_out, h);
  if (!w_.bo.empty()) dev.add(h, w_.bo, h);
  dev.add(x, h, x);
  dev.rms_norm(x, w_.ffn_norm, s.rms_eps, h);
  if (s.moe.active()) {
    dev.add(x, moe_ffn(dev, s.moe, w_.experts, h, moe), x);
    return;
  }
  dev.matmul(h, w_.w_gate, gate);
  dev.matmul(h, w_.w_up, up);
  dev.swiglu(gate, up, gate);
  dev.matmul(gate, w_.w_down, h);
  dev.add(x, h, x);
}

}  // namespace specd
