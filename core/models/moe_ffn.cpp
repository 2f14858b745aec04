#include "models/moe_ffn.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace specd {
namespace {

// Whether probability a of expert i ranks above b of expert j: higher first, then the lower
// index; NaN ranks below every number, so a NaN logit never wins a slot over a number.
bool ranks_above(float a, int32_t i, float b, int32_t j) {
  if (std::isnan(a) != std::isnan(b)) return std::isnan(b);
  if (a != b && !std::isnan(a)) return a > b;
  return i < j;
}

}  // namespace

void route_row(const MoeShape& s, const float* logits, int32_t* ids, float* weights,
               std::vector<float>& p) {
  const int32_t E = s.n_expert, k = s.n_used;
  p.resize(static_cast<size_t>(E));
  if (s.routing == ExpertRouting::kSoftmaxNormalized) {
    // softmax over all experts (f32, as llama.cpp's); the top k are picked from it
    float mx = -INFINITY;
    for (int32_t e = 0; e < E; ++e) mx = std::max(mx, logits[e]);
    float total = 0.0f;
    for (int32_t e = 0; e < E; ++e) total += (p[e] = std::exp(logits[e] - mx));
    for (float& v : p) v /= total;
  } else {
    std::copy(logits, logits + E, p.begin());  // the top k are picked from the logits
  }
  // the top k by selection: k is small
  for (int32_t j = 0; j < k; ++j) {
    int32_t best = -1;
    for (int32_t e = 0; e < E; ++e) {
      if (std::find(ids, ids + j, e) != ids + j) continue;
      if (best < 0 || ranks_above(p[e], e, p[best], best)) best = e;
    }
    ids[j] = best;
    weights[j] = p[best];
  }
  if (s.routing == ExpertRouting::kSoftmaxNormalized) {
    // llama.cpp's norm_w: divided by their sum, clamped away from 0 as it clamps it.
    float picked = 0.0f;
    for (int32_t j = 0; j < k; ++j) picked += weights[j];
    const float norm = std::max(picked, 6.103515625e-5f);
    for (int32_t j = 0; j < k; ++j) weights[j] /= norm;
    return;
  }
  // a softmax over the chosen logits (weights[0] is their maximum), as ggml's soft_max: the
  // exponentials summed in double, then each multiplied by the sum's inverse
  const float top = weights[0];
  double total = 0.0;
  for (int32_t j = 0; j < k; ++j) total += (weights[j] = std::exp(weights[j] - top));
  const float inverse = static_cast<float>(1.0 / total);
  for (int32_t j = 0; j < k; ++j) weights[j] *= inverse;
}

void add_shared_expert(Device& dev, const MoeShape& s, const MoeWeights& w, const View& h,
                       MoeScratch& sc) {
  const int64_t p = h.rows(), d = h.cols(), F = s.n_ff_shared;
  const View g = sc.shared_gate.view(SPECD_DTYPE_F32, p, F);
  const View u = sc.shared_up.view(SPECD_DTYPE_F32, p, F);
  const View o = sc.shared_out.view(SPECD_DTYPE_F32, p, d);
  const View logit = sc.shared_logit.view(SPECD_DTYPE_F32, p, 1);
  dev.matmul(h, w.shared_gate, g);
  dev.matmul(h, w.shared_up, u);
  dev.swiglu(g, u, g);
  dev.matmul(g, w.shared_down, o);
  dev.matmul(h, w.shared_gate_inp, logit);
  sc.host_shared.resize(static_cast<size_t>(p * d));
  sc.host_shared_logit.resize(static_cast<size_t>(p));
  sc.shared_out.download(sc.host_shared.data(), sc.host_shared.size() * 4);
  sc.shared_logit.download(sc.host_shared_logit.data(), sc.host_shared_logit.size() * 4);
  // llama.cpp: the experts' sum plus the shared output times the sigmoid of its logit (f32).
  for (int64_t r = 0; r < p; ++r) {
    const float gate = 1.0f / (1.0f + std::exp(-sc.host_shared_logit[r]));
    float* y = &sc.host_sum[r * d];
    const float* x = &sc.host_shared[r * d];
    for (int64_t c = 0; c < d; ++c) y[c] += x[c] * gate;
  }
}

void MoeScratch::ensure(Device& device, const MoeShape& s, int64_t d, int64_t m) {
  if (m <= rows_) return;
  const int64_t n = m * s.n_used;
  logits = device.alloc(static_cast<uint64_t>(m * s.n_expert) * 4);
  ids = device.alloc(static_cast<uint64_t>(n) * 4);
  picked = device.alloc(static_cast<uint64_t>(n * d) * 4);
  gate = device.alloc(static_cast<uint64_t>(n * s.n_ff) * 4);
  up = device.alloc(static_cast<uint64_t>(n * s.n_ff) * 4);
  out = device.alloc(static_cast<uint64_t>(n * d) * 4);
  sum = device.alloc(static_cast<uint64_t>(m * d) * 4);
  if (s.n_ff_shared > 0) {
    shared_logit = device.alloc(static_cast<uint64_t>(m) * 4);
    shared_gate = device.alloc(static_cast<uint64_t>(m * s.n_ff_shared) * 4);
    shared_up = device.alloc(static_cast<uint64_t>(m * s.n_ff_shared) * 4);
    shared_out = device.alloc(static_cast<uint64_t>(m * d) * 4);
  }
  rows_ = m;
}

View moe_ffn(Device& dev, const MoeShape& s, const MoeWeights& w, const View& h, MoeScratch& sc) {
  const int64_t p = h.rows(), d = h.cols(), E = s.n_expert, k = s.n_used, F = s.n_ff;
  const int64_t n = p * k;
  if (sc.rows_ < p) throw Error("moe ffn: the scratch holds fewer rows than the piece");
  const View logits = sc.logits.view(SPECD_DTYPE_F32, p, E);
  dev.matmul(h, w.router, logits);
  if (s.biases) dev.add(logits, w.router_bias, logits);
  sc.host_logits.resize(static_cast<size_t>(p * E));
  sc.logits.download(sc.host_logits.data(), sc.host_logits.size() * 4);
  sc.chosen.resize(static_cast<size_t>(n));
  sc.weights.resize(static_cast<size_t>(n));
  for (int64_t r = 0; r < p; ++r)
    route_row(s, &sc.host_logits[r * E], &sc.chosen[r * k], &sc.weights[r * k], sc.ranked);
  // Group the (row, slot) pairs by expert, rows in order within each: grouped row g holds
  // source row order[g]; slot_of maps a pair to its grouped row.
  sc.first.assign(static_cast<size_t>(E + 1), 0);
  for (int32_t e : sc.chosen) ++sc.first[e + 1];
  for (int64_t e = 0; e < E; ++e) sc.first[e + 1] += sc.first[e];
  sc.order.resize(static_cast<size_t>(n));
  sc.slot_of.resize(static_cast<size_t>(n));
  sc.next.assign(sc.first.begin(), sc.first.end() - 1);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t g = sc.next[sc.chosen[i]]++;
    sc.order[g] = static_cast<int32_t>(i / k);
    sc.slot_of[i] = g;
  }
  sc.ids.upload(sc.order.data(), static_cast<uint64_t>(n) * 4);
  const View picked = sc.picked.view(SPECD_DTYPE_F32, n, d);
  const View gate = sc.gate.view(SPECD_DTYPE_F32, n, F);
  const View up = sc.up.view(SPECD_DTYPE_F32, n, F);
  const View out = sc.out.view(SPECD_DTYPE_F32, n, d);
  dev.copy_rows(h, sc.ids.view(SPECD_DTYPE_I32, 1, n), picked);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t at = sc.first[e], c = sc.first[e + 1] - at;
    if (c == 0) continue;
    const View x = picked.slice_rows(at, c), g = gate.slice_rows(at, c), u = up.slice_rows(at, c);
    const int64_t row = e * (w.expert_stride ? w.expert_stride : F);
    dev.matmul(x, w.gate.slice_rows(row, F), g);
    dev.matmul(x, w.up.slice_rows(row, F), u);
    if (s.biases) {  // expert e's bias row added to each of its rows
      dev.add(g, w.gate_bias.slice_rows(e, 1), g);
      dev.add(u, w.up_bias.slice_rows(e, 1), u);
    }
    ++sc.experts_run;
  }
  if (s.activation == ExpertActivation::kSwigluOai)
    dev.swiglu_oai(gate, up, kSwigluOaiAlpha, kSwigluOaiLimit, gate);
  else
    dev.swiglu(gate, up, gate);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t at = sc.first[e], c = sc.first[e + 1] - at;
    if (c == 0) continue;
    const View o = out.slice_rows(at, c);
    dev.matmul(gate.slice_rows(at, c), w.down.slice_rows(e * d, d), o);
    if (s.biases) dev.add(o, w.down_bias.slice_rows(e, 1), o);
  }
  // Each row's weighted sum, in its slots' order.
  sc.host_out.resize(static_cast<size_t>(n * d));
  sc.out.download(sc.host_out.data(), sc.host_out.size() * 4);
  sc.host_sum.assign(static_cast<size_t>(p * d), 0.0f);
  for (int64_t r = 0; r < p; ++r) {
    float* y = &sc.host_sum[r * d];
    for (int64_t j = 0; j < k; ++j) {
      const float* o = &sc.host_out[sc.slot_of[r * k + j] * d];
      const float wj = sc.weights[r * k + j];
      for (int64_t c = 0; c < d; ++c) y[c] += wj * o[c];
    }
  }
  if (s.n_ff_shared > 0) add_shared_expert(dev, s, w, h, sc);
  sc.sum.upload(sc.host_sum.data(), sc.host_sum.size() * 4);
  return sc.sum.view(SPECD_DTYPE_F32, p, d);
}

}  // namespace specd
