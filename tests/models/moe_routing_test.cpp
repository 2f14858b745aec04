// The host-side routing of a mixture of experts (models/moe_ffn.hpp): which experts a row goes
// to and with what weights, ties and NaN logits included.
#include <cmath>
#include <vector>

#include "doctest/doctest.h"
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
