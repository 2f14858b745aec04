#include "models/decoder_block.hpp"

#include <cmath>

#include "common/error.hpp"

namespace specd {

BlockWeights load_block(WeightLoader& loader, const std::string& p, const BlockShape& s) {
  const int64_t d = s.n_embd, F = s.n_ff, qd = s.q_dim(), kvd = s.kv_dim();
  BlockWeights w;
  w.attn_norm = loader.vector(p + "attn_norm.weight", d);  // [1, d]
  w.wq = loader.matrix(p + "attn_q.weight", d, qd);        // [H*hd, d]
  w.wk = loader.matrix(p + "attn_k.weight", d, kvd);       // [Hkv*hd, d]
  w.wv = loader.matrix(p + "attn_v.weight", d, kvd);       // [Hkv*hd, d]
  w.wo = loader.matrix(p + "attn_output.weight", qd, d);   // [d, H*hd]
  w.ffn_norm = loader.vector(p + "ffn_norm.weight", d);    // [1, d]
  w.w_gate = loader.matrix(p + "ffn_gate.weight", d, F);   // [F, d]
  w.w_up = loader.matrix(p + "ffn_up.weight", d, F);       // [F, d]
  w.w_down = loader.matrix(p + "ffn_down.weight", F, d);   // [d, F]
  return w;
}

void BlockScratch::ensure(Device& device, const BlockShape& shape, int64_t m) {
  if (m <= rows_) return;
  const int64_t d = shape.n_embd, F = shape.n_ff, qd = shape.q_dim();
  h = device.alloc(m * d * 4);
  q = device.alloc(m * qd * 4);
  attn = device.alloc(m * qd * 4);
  gate = device.alloc(m * F * 4);
  up = device.alloc(m * F * 4);
  rows_ = m;
}

void DecoderBlock::run(const View& x, const BlockBatch& b, BlockScratch& scratch) const {
  const int64_t m = x.rows();
  if (scratch.rows() < m) throw Error("decoder block: the scratch holds fewer than m rows");
  const BlockShape& s = shape_;
  const View h = scratch.h.view(SPECD_DTYPE_F32, m, s.n_embd);         // [m, d]
  const View q = scratch.q.view(SPECD_DTYPE_F32, m, s.q_dim());        // [m, H*hd]
  const View attn = scratch.attn.view(SPECD_DTYPE_F32, m, s.q_dim());  // [m, H*hd]
  const View gate = scratch.gate.view(SPECD_DTYPE_F32, m, s.n_ff);     // [m, F]
  const View up = scratch.up.view(SPECD_DTYPE_F32, m, s.n_ff);         // [m, F]
  const View k_new = b.k_cache.slice_rows(b.first_row, m);             // [m, Hkv*hd]
  const View v_new = b.v_cache.slice_rows(b.first_row, m);             // [m, Hkv*hd]
  const specd_rope_params rq{sizeof(specd_rope_params), static_cast<uint32_t>(s.n_head),
                             static_cast<uint32_t>(s.head_dim), static_cast<uint32_t>(s.n_rot),
                             s.rope_base};
  specd_rope_params rk = rq;
  rk.n_head = static_cast<uint32_t>(s.n_head_kv);
  const specd_attention_params ap{sizeof(specd_attention_params), static_cast<uint32_t>(s.n_head),
                                  static_cast<uint32_t>(s.n_head_kv),
                                  static_cast<uint32_t>(s.head_dim),
                                  1.0f / std::sqrt(static_cast<float>(s.head_dim))};
  Device& dev = *device_;
  dev.rms_norm(x, w_.attn_norm, s.rms_eps, h);
  dev.matmul(h, w_.wq, q);
  dev.matmul(h, w_.wk, k_new);
  dev.matmul(h, w_.wv, v_new);
  dev.rope(q, b.positions, rq);
  dev.rope(k_new, b.positions, rk);
  dev.attention(q, b.k_cache, b.v_cache, b.prefix_len, b.extra_begin, b.extra_slots, ap, attn);
  dev.matmul(attn, w_.wo, h);
  dev.add(x, h, x);
  dev.rms_norm(x, w_.ffn_norm, s.rms_eps, h);
  dev.matmul(h, w_.w_gate, gate);
  dev.matmul(h, w_.w_up, up);
  dev.swiglu(gate, up, gate);
  dev.matmul(gate, w_.w_down, h);
  dev.add(x, h, x);
}

}  // namespace specd
