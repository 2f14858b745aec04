// A mixture of experts (models/moe_ffn.hpp): the host-side routing (which experts a row goes
// to and with what weights, ties and NaN logits included) and moe_ffn against doubles.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "doctest/doctest.h"
#include "model_runs.hpp"
#include "models/moe_ffn.hpp"

using namespace specd;

namespace {

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

Routed route(std::vector<float> logits, int32_t k,
             ExpertRouting routing = ExpertRouting::kSoftmaxNormalized) {
  MoeShape s{static_cast<int32_t>(logits.size()), k, 1, routing};
  Routed r{std::vector<int32_t>(k), std::vector<float>(k)};
  std::vector<float> ranked;
  route_row(s, logits.data(), r.ids.data(), r.weights.data(), ranked);
  return r;
}

}  // namespace

TEST_CASE("routing takes the most probable experts, weighted by probability over their sum") {
  const Routed r = route({0.0f, 1.0f, 3.0f, 2.0f}, 2);
  CHECK(r.ids == std::vector<int32_t>{2, 3});
  const double e3 = std::exp(3.0), e2 = std::exp(2.0);
  CHECK(r.weights[0] == doctest::Approx(e3 / (e3 + e2)).epsilon(1e-6));
  CHECK(r.weights[1] == doctest::Approx(e2 / (e3 + e2)).epsilon(1e-6));
  // Every expert: the weights are the softmax itself.
  const Routed all = route({0.5f, -1.0f, 2.0f}, 3);
  CHECK(all.ids == std::vector<int32_t>{2, 0, 1});
  double total = 0;
  for (float l : {0.5f, -1.0f, 2.0f}) total += std::exp(l);
  CHECK(all.weights[2] == doctest::Approx(std::exp(-1.0) / total).epsilon(1e-6));
}

TEST_CASE("routing breaks ties by the lower expert and never picks an expert twice") {
  const Routed r = route({1.0f, 4.0f, 1.0f, 4.0f, 1.0f}, 3);
  CHECK(r.ids == std::vector<int32_t>{1, 3, 0});
  const Routed flat = route({0.0f, 0.0f, 0.0f, 0.0f}, 2);
  CHECK(flat.ids == std::vector<int32_t>{0, 1});
  CHECK(flat.weights[0] == 0.5f);
  CHECK(flat.weights[1] == 0.5f);
}

TEST_CASE("a NaN router logit still routes to distinct, valid experts") {
  const Routed r = route({NAN, 0.0f, 5.0f, NAN}, 3);
  for (int32_t i = 0; i < 3; ++i) {
    CHECK(r.ids[i] >= 0);
    CHECK(r.ids[i] < 4);
    for (int32_t j = 0; j < i; ++j) CHECK(r.ids[i] != r.ids[j]);
  }
}

TEST_CASE("gpt-oss's routing takes the top logits, weighted by a softmax over those alone") {
  const std::vector<float> logits = {0.0f, 1.0f, 3.0f, 2.0f, -4.0f};
  const Routed r = route(logits, 2, ExpertRouting::kSoftmaxOfChosen);
  CHECK(r.ids == std::vector<int32_t>{2, 3});
  const double e3 = std::exp(3.0), e2 = std::exp(2.0);
  CHECK(r.weights[0] == doctest::Approx(e3 / (e3 + e2)).epsilon(1e-6));
  CHECK(r.weights[1] == doctest::Approx(e2 / (e3 + e2)).epsilon(1e-6));
  // (Mathematically the normalized softmax over all; computed from the chosen logits alone.)
  const Routed three = route(logits, 3, ExpertRouting::kSoftmaxOfChosen);
  CHECK(three.ids == std::vector<int32_t>{2, 3, 1});
  const double e1 = std::exp(1.0);
  CHECK(three.weights[2] == doctest::Approx(e1 / (e3 + e2 + e1)).epsilon(1e-6));
  // Huge logits do not overflow: the chosen maximum is subtracted first.
  const Routed big = route({1000.0f, 999.0f, -1000.0f}, 2, ExpertRouting::kSoftmaxOfChosen);
  CHECK(big.ids == std::vector<int32_t>{0, 1});
  CHECK(big.weights[0] == doctest::Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-6));
  CHECK(std::isfinite(big.weights[1]));
}

TEST_CASE("gpt-oss's routing passes NaN logits over while numbers are left") {
  const Routed r = route({NAN, 1.0f, NAN, 3.0f}, 2, ExpertRouting::kSoftmaxOfChosen);
  CHECK(r.ids == std::vector<int32_t>{3, 1});
  CHECK(std::isfinite(r.weights[0]));
  CHECK(r.weights[0] + r.weights[1] == doctest::Approx(1.0));
}

namespace {

// Random f32 values and a device view of them as [rows, cols].
struct Weights {
  std::vector<float> v;
  Buffer buffer;
  View view;
};
Weights random_weights(Device& dev, std::mt19937& rng, int64_t rows, int64_t cols) {
  std::normal_distribution<float> normal(0.0f, 0.5f);
  Weights w;
  w.v.resize(static_cast<size_t>(rows * cols));
  for (float& x : w.v) x = normal(rng);
  w.buffer = dev.alloc(w.v.size() * 4);
  w.buffer.upload(w.v.data(), w.v.size() * 4);
  w.view = w.buffer.view(SPECD_DTYPE_F32, rows, cols);
  return w;
}

// Rows [first, first + n) of W [.., in] times x, in double.
std::vector<double> times(const Weights& W, int64_t first, int64_t n,
                          const std::vector<double>& x) {
  const int64_t in = static_cast<int64_t>(x.size());
  std::vector<double> y(static_cast<size_t>(n), 0.0);
  for (int64_t o = 0; o < n; ++o)
    for (int64_t i = 0; i < in; ++i) y[o] += double(W.v[(first + o) * in + i]) * x[i];
  return y;
}

// silu(g) * u, then down rows [first, first + d).
std::vector<double> swiglu_ffn(const Weights& gate, const Weights& up, const Weights& down,
                               int64_t f_first, int64_t F, int64_t d_first, int64_t d,
                               const std::vector<double>& x) {
  std::vector<double> g = times(gate, f_first, F, x);
  const std::vector<double> u = times(up, f_first, F, x);
  for (int64_t i = 0; i < F; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
  return times(down, d_first, d, g);
}

}  // namespace

TEST_CASE("moe_ffn: routed experts and a sigmoid-gated shared expert, against doubles") {
  Device& dev = test::two_thread_cpu_device();
  const int64_t d = 8, E = 3, F = 4, Fs = 6, p = 5;
  MoeShape s{static_cast<int32_t>(E), 2, static_cast<int32_t>(F),
             ExpertRouting::kSoftmaxNormalized};
  s.n_ff_shared = static_cast<int32_t>(Fs);
  std::mt19937 rng(3);
  const Weights router = random_weights(dev, rng, E, d), gate = random_weights(dev, rng, E * F, d),
                up = random_weights(dev, rng, E * F, d), down = random_weights(dev, rng, E * d, F),
                sg_in = random_weights(dev, rng, 1, d), sg = random_weights(dev, rng, Fs, d),
                su = random_weights(dev, rng, Fs, d), sd = random_weights(dev, rng, d, Fs),
                h = random_weights(dev, rng, p, d);
  MoeWeights w;
  w.router = router.view;
  w.gate = gate.view;
  w.up = up.view;
  w.down = down.view;
  w.shared_gate_inp = sg_in.view;
  w.shared_gate = sg.view;
  w.shared_up = su.view;
  w.shared_down = sd.view;
  MoeScratch scratch;
  scratch.ensure(dev, s, d, p);
  const View y = moe_ffn(dev, s, w, h.view, scratch);
  Buffer out = dev.alloc(p * d * 4), zeros = dev.alloc(p * d * 4);
  const std::vector<float> nothing(static_cast<size_t>(p * d), 0.0f);
  zeros.upload(nothing.data(), nothing.size() * 4);
  dev.add(y, zeros.view(SPECD_DTYPE_F32, p, d), out.view(SPECD_DTYPE_F32, p, d));  // a copy
  std::vector<float> got(static_cast<size_t>(p * d));
  out.download(got.data(), got.size() * 4);
  for (int64_t r = 0; r < p; ++r) {
    CAPTURE(r);
    const std::vector<double> x(h.v.begin() + r * d, h.v.begin() + (r + 1) * d);
    const std::vector<double> logits = times(router, 0, E, x);
    // softmax, the top 2, normalized: the two largest logits' softmax over just them
    std::vector<int64_t> order = {0, 1, 2};
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
    const double e0 = std::exp(logits[order[0]]), e1 = std::exp(logits[order[1]]);
    std::vector<double> want(static_cast<size_t>(d), 0.0);
    for (int j = 0; j < 2; ++j) {
      const int64_t e = order[j];
      const std::vector<double> o = swiglu_ffn(gate, up, down, e * F, F, e * d, d, x);
      for (int64_t c = 0; c < d; ++c) want[c] += (j == 0 ? e0 : e1) / (e0 + e1) * o[c];
    }
    const double gate_logit = times(sg_in, 0, 1, x)[0];
    const std::vector<double> shared = swiglu_ffn(sg, su, sd, 0, Fs, 0, d, x);
    for (int64_t c = 0; c < d; ++c) {
      want[c] += shared[c] / (1 + std::exp(-gate_logit));
      CHECK(got[r * d + c] == doctest::Approx(want[c]).epsilon(1e-5));
    }
  }
}
