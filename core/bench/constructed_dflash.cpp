#include "bench/constructed_dflash.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "writers/gguf_writer.hpp"
#include "writers/llama_writer.hpp"

namespace specd::bench {
namespace {

// The query's per-head RMS after its norm: q·k of a mask row with the root is
// kQuery · head_dim / √head_dim, large enough that no other row takes any attention.
constexpr float kQuery = 8.0f;
// The root's normed embedding enters the mask row's residual this many times over, so that
// the row's state points at the root's embedding.
constexpr float kCarry = 8.0f;

// x / rms(x).
std::vector<float> normed(const float* x, int64_t d) {
  double ss = 0;
  for (int64_t i = 0; i < d; ++i) ss += double(x[i]) * x[i];
  const float inv = float(1.0 / std::sqrt(ss / double(d) + 1e-12));
  std::vector<float> out(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) out[static_cast<size_t>(i)] = x[i] * inv;
  return out;
}

// y with (R R^T) y = b, R's rows `rows` (Gaussian elimination with partial pivoting; the
// Gram matrix of independent rows is positive definite).
std::vector<double> solve_gram(const std::vector<std::vector<float>>& rows, std::vector<double> b) {
  const size_t n = rows.size();
  std::vector<std::vector<double>> g(n, std::vector<double>(n));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      double s = 0;
      for (size_t k = 0; k < rows[i].size(); ++k) s += double(rows[i][k]) * rows[j][k];
      g[i][j] = s;
    }
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(g[r][c]) > std::fabs(g[pivot][c])) pivot = r;
    std::swap(g[c], g[pivot]);
    std::swap(b[c], b[pivot]);
    if (std::fabs(g[c][c]) < 1e-9)
      throw UsageError("constructed DFlash drafter: the model is too narrow (" +
                       std::to_string(rows.front().size()) + ") for its " + std::to_string(n) +
                       " key constraints");
    for (size_t r = c + 1; r < n; ++r) {
      const double f = g[r][c] / g[c][c];
      for (size_t k = c; k < n; ++k) g[r][k] -= f * g[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> y(n);
  for (size_t c = n; c-- > 0;) {
    double s = b[c];
    for (size_t k = c + 1; k < n; ++k) s -= g[c][k] * y[k];
    y[c] = s / g[c][c];
  }
  return y;
}

}  // namespace

void write_constructed_dflash(const std::string& path, const ConstructedSpec& target,
                              double agreement) {
  constructed_draft(agreement);  // refuses an agreement outside [0, 1]
  const int64_t d = target.n_embd, V = target.vocab, H = target.n_head, hd = d / H, n_ff = 128;
  const int32_t mask = static_cast<int32_t>(V - 1);  // an unused token of the byte tokenizer
  ConstructedSpec map = target;
  map.agreement = agreement;
  std::mt19937_64 rng(target.seed);
  std::vector<float> embd = constructed_embedding(target, rng);
  const std::vector<float> out = constructed_output(map, embd);
  {  // the mask's own embedding, away from every other token's
    std::mt19937_64 mask_rng(target.seed ^ 0xDF1A5Bull);
    std::normal_distribution<float> unit(0.0f, 1.0f);
    for (int64_t i = 0; i < d; ++i) embd[static_cast<size_t>(mask * d + i)] = unit(mask_rng);
  }
  // u: ones on each head's lowest-frequency rope pairs (NEOX pairs j and j + hd/2).
  std::vector<float> u(static_cast<size_t>(d), 0.0f);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t j = hd / 2 - 4; j < hd / 2; ++j) {
      u[static_cast<size_t>(h * hd + j)] = 1.0f;
      u[static_cast<size_t>(h * hd + j + hd / 2)] = 1.0f;
    }
  // wq = u e_m^T maps the normed mask embedding to u; wk = u w^T maps every cycle token's to
  // +u and the mask's to -u: w is the least-norm solution of n_t · w = 1 for the cycle's
  // normed embeddings n_t and n_m · w = -1 for the mask's (w = N^T (N N^T)^-1 b; the rows
  // are independent while the cycle has fewer tokens than the width).
  const std::vector<float> m = normed(&embd[static_cast<size_t>(mask * d)], d);
  std::vector<int32_t> cycle = constructed_cycle(target);
  std::sort(cycle.begin(), cycle.end());
  if (cycle.back() == mask)
    throw UsageError(
        "constructed DFlash drafter: the planted text fills the vocabulary, whose "
        "last token it needs as its mask (--vocab " +
        std::to_string(V) + ")");
  if (static_cast<int64_t>(cycle.size()) >= d)
    throw UsageError("constructed DFlash drafter: a map of " + std::to_string(cycle.size()) +
                     " tokens needs a target wider than that (n_embd " + std::to_string(d) + ")");
  std::vector<std::vector<float>> rows;
  std::vector<double> b;
  for (int32_t t : cycle) {
    rows.push_back(normed(&embd[static_cast<size_t>(t * d)], d));
    b.push_back(1.0);
  }
  rows.push_back(m);
  b.push_back(-1.0);
  const std::vector<double> y = solve_gram(rows, b);
  std::vector<float> w(static_cast<size_t>(d), 0.0f);
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t i = 0; i < d; ++i)
      w[static_cast<size_t>(i)] += float(y[r] * rows[r][static_cast<size_t>(i)]);
  std::vector<float> wq(static_cast<size_t>(d * d)), wk(static_cast<size_t>(d * d));
  for (int64_t r = 0; r < d; ++r)
    for (int64_t c = 0; c < d; ++c) {
      wq[static_cast<size_t>(r * d + c)] =
          u[static_cast<size_t>(r)] * m[static_cast<size_t>(c)] / float(d);
      wk[static_cast<size_t>(r * d + c)] = u[static_cast<size_t>(r)] * w[static_cast<size_t>(c)];
    }
  std::vector<float> identity(static_cast<size_t>(d * d), 0.0f), carry = identity;
  for (int64_t i = 0; i < d; ++i) {
    identity[static_cast<size_t>(i * d + i)] = 1.0f;
    carry[static_cast<size_t>(i * d + i)] = kCarry;
  }

  GgufWriter g;
  const std::string a = "dflash.";
  set_one_layer_metadata(g, "dflash", target.name + "-dflash", target.n_ctx, d, n_ff);
  g.set_u32(a + "attention.head_count", static_cast<uint32_t>(H));
  g.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(H));
  g.set_u32(a + "attention.key_length", static_cast<uint32_t>(hd));
  g.set_u32(a + "attention.value_length", static_cast<uint32_t>(hd));
  g.set_f32(a + "rope.freq_base", 10000.0f);
  g.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
  g.set_u32(a + "block_size", 16);
  g.set(a + "target_layers", GgufValue::int32_array({static_cast<int32_t>(target.n_layer / 2)}));
  set_constructed_tokenizer(g, target);
  g.set_u32("tokenizer.ggml.mask_token_id", static_cast<uint32_t>(mask));

  const GgmlType q8 = GgmlType::kQ8_0;
  const std::vector<float> zeros(static_cast<size_t>(std::max(d, n_ff) * d), 0.0f);
  const std::vector<float> ones(static_cast<size_t>(d), 1.0f),
      query(static_cast<size_t>(hd), kQuery), key(static_cast<size_t>(hd), 1.0f);
  g.add_tensor_f32("fc.weight", q8, {d, d}, zeros.data());
  g.add_tensor_f32("enc.output_norm.weight", GgmlType::kF32, {d}, ones.data());
  g.add_tensor_f32("output_norm.weight", GgmlType::kF32, {d}, ones.data());
  g.add_tensor_f32("token_embd.weight", q8, {d, V}, embd.data());
  g.add_tensor_f32("output.weight", q8, {d, V}, out.data());
  const std::string p = "blk.0.";
  g.add_tensor_f32(p + "attn_norm.weight", GgmlType::kF32, {d}, ones.data());
  g.add_tensor_f32(p + "attn_q.weight", q8, {d, d}, wq.data());
  g.add_tensor_f32(p + "attn_k.weight", q8, {d, d}, wk.data());
  g.add_tensor_f32(p + "attn_v.weight", q8, {d, d}, identity.data());
  g.add_tensor_f32(p + "attn_output.weight", q8, {d, d}, carry.data());
  g.add_tensor_f32(p + "attn_q_norm.weight", GgmlType::kF32, {hd}, query.data());
  g.add_tensor_f32(p + "attn_k_norm.weight", GgmlType::kF32, {hd}, key.data());
  g.add_tensor_f32(p + "ffn_norm.weight", GgmlType::kF32, {d}, ones.data());
  g.add_tensor_f32(p + "ffn_gate.weight", q8, {d, n_ff}, zeros.data());
  g.add_tensor_f32(p + "ffn_up.weight", q8, {d, n_ff}, zeros.data());
  g.add_tensor_f32(p + "ffn_down.weight", q8, {n_ff, d}, zeros.data());
  g.write(path);
}

}  // namespace specd::bench
