// The ABI 0.7 ops of hybrid models on every available backend: gated_delta_net against a
// double-precision reference of backend.h's definition (outputs and the states written to
// slots), its state protocol (a chain split across calls through a slot, a branch started
// from a snapshot, rows of other sequences in the call) bit for bit, and mul_sigmoid.
#include <algorithm>
#include <cmath>

#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

namespace {

// The head size under test: 16 (the CPU's generic loops), 64 and 128 (its unrolled ones).
int64_t kS = 16;
constexpr int64_t kHk = 2, kHv = 4, kK = 4;
int64_t kC = (2 * kHk + kHv) * kS;
constexpr int64_t kSlots = 8;

void set_head_size(int64_t s) {
  kS = s;
  kC = (2 * kHk + kHv) * kS;
}

struct State {  // one slot, as doubles
  std::vector<double> conv = std::vector<double>(static_cast<size_t>((kK - 1) * kC), 0.0);
  std::vector<double> ssm = std::vector<double>(static_cast<size_t>(kHv * kS * kS), 0.0);
};

// backend.h's definition for one row, in double: updates `s`, returns the row's output.
std::vector<double> reference_row(State& s, const float* qkv, const float* alpha, const float* beta,
                                  const std::vector<float>& w, const std::vector<float>& dt,
                                  const std::vector<float>& a) {
  std::vector<double> c(kC);
  for (int64_t j = 0; j < kC; ++j) {
    double sum = 0;
    for (int64_t t = 0; t + 1 < kK; ++t) sum += s.conv[t * kC + j] * w[j * kK + t];
    sum += qkv[j] * w[j * kK + kK - 1];
    c[j] = sum / (1 + std::exp(-sum));
  }
  for (int64_t t = 0; t + 2 < kK; ++t)
    for (int64_t j = 0; j < kC; ++j) s.conv[t * kC + j] = s.conv[(t + 1) * kC + j];
  for (int64_t j = 0; j < kC; ++j) s.conv[(kK - 2) * kC + j] = qkv[j];
  for (int64_t g = 0; g < 2 * kHk; ++g) {
    double ss = 0;
    for (int64_t x = 0; x < kS; ++x) ss += c[g * kS + x] * c[g * kS + x];
    const double scale = 1.0 / std::max(std::sqrt(ss), 1e-6);
    for (int64_t x = 0; x < kS; ++x) c[g * kS + x] *= scale;
  }
  std::vector<double> out(kHv * kS);
  for (int64_t h = 0; h < kHv; ++h) {
    const double* q = c.data() + (h % kHk) * kS;
    const double* k = c.data() + kHk * kS + (h % kHk) * kS;
    const double* v = c.data() + 2 * kHk * kS + h * kS;
    const double z = double(alpha[h]) + dt[h];
    const double decay = std::exp(std::log1p(std::exp(z)) * a[h]);
    const double b = 1 / (1 + std::exp(-double(beta[h])));
    double* m = s.ssm.data() + h * kS * kS;  // (x, y) at x * S + y
    for (int64_t y = 0; y < kS; ++y) {
      double dot = 0;
      for (int64_t x = 0; x < kS; ++x) dot += (m[x * kS + y] *= decay) * k[x];
      const double d = (v[y] - dot) * b;
      double o = 0;
      for (int64_t x = 0; x < kS; ++x) o += (m[x * kS + y] += k[x] * d) * q[x];
      out[h * kS + y] = o / std::sqrt(double(kS));
    }
  }
  return out;
}

// One layer's inputs and state pools on a device.
struct Layer {
  std::vector<float> w, dt, a;
  Buffer bw, bdt, ba, conv, ssm, ints;
  Device* dev;

  Layer(Device& d, std::mt19937& rng) : dev(&d) {
    w = random_floats(rng, kC * kK, 0.5f);
    dt = random_floats(rng, kHv, 1.0f);
    a = random_floats(rng, kHv, 2.0f);
    for (float& v : a) v = -std::fabs(v) - 0.5f;
    bw = upload_vec(d, w);
    bdt = upload_vec(d, dt);
    ba = upload_vec(d, a);
    conv = d.alloc(kSlots * (kK - 1) * kC * 4);
    ssm = d.alloc(kSlots * kHv * kS * kS * 4);
    const std::vector<float> zeros(kSlots * kHv * kS * kS, 0.0f);
    conv.upload(zeros.data(), kSlots * (kK - 1) * kC * 4);
    ssm.upload(zeros.data(), kSlots * kHv * kS * kS * 4);
  }

  // Runs rows [m] of qkv/alpha/beta with the given slots; returns out [m, Hv S].
  std::vector<float> run(const std::vector<float>& qkv, const std::vector<float>& alpha,
                         const std::vector<float>& beta, const std::vector<int32_t>& in,
                         const std::vector<int32_t>& out) {
    const int64_t m = static_cast<int64_t>(in.size());
    Buffer bq = upload_vec(*dev, qkv), bal = upload_vec(*dev, alpha), bbe = upload_vec(*dev, beta);
    std::vector<int32_t> idx(in);
    idx.insert(idx.end(), out.begin(), out.end());
    ints = upload_vec(*dev, idx);
    Buffer bo = dev->alloc(m * kHv * kS * 4);
    specd_delta_net_params p{sizeof(p), kHk, kHv, static_cast<uint32_t>(kS), kK, 1e-6f};
    dev->gated_delta_net(bq.view(SPECD_DTYPE_F32, m, kC), bal.view(SPECD_DTYPE_F32, m, kHv),
                         bbe.view(SPECD_DTYPE_F32, m, kHv), bw.view(SPECD_DTYPE_F32, kC, kK),
                         bdt.view(SPECD_DTYPE_F32, 1, kHv), ba.view(SPECD_DTYPE_F32, 1, kHv),
                         conv.view(SPECD_DTYPE_F32, kSlots, (kK - 1) * kC),
                         ssm.view(SPECD_DTYPE_F32, kSlots, kHv * kS * kS),
                         ints.view(SPECD_DTYPE_I32, 1, m), ints.view(SPECD_DTYPE_I32, 1, m, m * 4),
                         p, bo.view(SPECD_DTYPE_F32, m, kHv * kS));
    return download_vec<float>(bo, m * kHv * kS);
  }

  std::vector<float> ssm_slot(int32_t slot) {
    std::vector<float> all = download_vec<float>(ssm, kSlots * kHv * kS * kS);
    return {all.begin() + slot * kHv * kS * kS, all.begin() + (slot + 1) * kHv * kS * kS};
  }
};

struct Rows {
  std::vector<float> qkv, alpha, beta;
  Rows(std::mt19937& rng, int64_t m)
      : qkv(random_floats(rng, m * kC)),
        alpha(random_floats(rng, m * kHv)),
        beta(random_floats(rng, m * kHv)) {}
  // Rows [first, first + n) as a Rows of their own.
  Rows slice(int64_t first, int64_t n) const {
    Rows r = *this;
    r.qkv.assign(qkv.begin() + first * kC, qkv.begin() + (first + n) * kC);
    r.alpha.assign(alpha.begin() + first * kHv, alpha.begin() + (first + n) * kHv);
    r.beta.assign(beta.begin() + first * kHv, beta.begin() + (first + n) * kHv);
    return r;
  }
};

std::vector<float> concat(std::vector<float> a, const std::vector<float>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("gated_delta_net equals its definition, outputs and the states in the slots") {
  std::mt19937 rng(51);
  for (int64_t S : {16, 64, 128})
    for (auto& ob : open_backends()) {
      set_head_size(S);
      CAPTURE(S);
      Device& dev = *ob.device;
      if (!dev.has_hybrid_ops()) {
        MESSAGE("skipping backend '" << dev.backend().name() << "': no ABI 0.7 ops");
        continue;
      }
      Layer layer(dev, rng);
      // Two sequences in one call: a chain of 5 rows from slot 1 (empty) into slot 2, then a
      // chain of 3 rows from slot 3 (empty), each row's state kept in slots 4..6.
      const Rows rows(rng, 8);
      const std::vector<float> got =
          layer.run(rows.qkv, rows.alpha, rows.beta, {1, -1, -1, -1, -1, 3, -1, -1},
                    {-1, -1, -1, -1, 2, 4, 5, 6});
      State s1, s2;
      std::vector<double> want, scale;
      std::vector<State> kept;
      for (int64_t i = 0; i < 8; ++i) {
        State& s = i < 5 ? s1 : s2;
        const auto o = reference_row(s, rows.qkv.data() + i * kC, rows.alpha.data() + i * kHv,
                                     rows.beta.data() + i * kHv, layer.w, layer.dt, layer.a);
        want.insert(want.end(), o.begin(), o.end());
        if (i >= 5) kept.push_back(s);
      }
      double worst = 0;
      for (size_t e = 0; e < want.size(); ++e)
        worst = std::max(worst, std::fabs(got[e] - want[e]) / (std::fabs(want[e]) + 1e-3));
      INFO(dev.backend().name() << ": worst relative output error " << worst);
      CHECK(worst < 1e-4);
      auto check_state = [&](int32_t slot, const State& s) {
        const std::vector<float> m = layer.ssm_slot(slot);
        double err = 0;
        for (int64_t e = 0; e < kHv * kS * kS; ++e)
          err = std::max(err, std::fabs(m[e] - s.ssm[e]) / (std::fabs(s.ssm[e]) + 1e-3));
        INFO("slot " << slot);
        CHECK(err < 1e-4);
      };
      check_state(2, s1);
      for (int32_t j = 0; j < 3; ++j) check_state(4 + j, kept[static_cast<size_t>(j)]);
      check_state(1, State{});  // read, never written
    }
}

TEST_CASE(
    "gated_delta_net: a chain split through a slot, a branch from a snapshot and other "
    "sequences' rows give the same bits") {
  std::mt19937 rng(52);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    if (!dev.has_hybrid_ops()) continue;
    Layer layer(dev, rng);
    const Rows rows(rng, 6), other(rng, 4);
    // The whole chain at once, each row's state kept (slots 2..7 hold rows 0..5).
    const auto whole =
        layer.run(rows.qkv, rows.alpha, rows.beta, {1, -1, -1, -1, -1, -1}, {2, 3, 4, 5, 6, 7});
    const auto after = layer.ssm_slot(7);
    // Rows 3..5 again from row 2's snapshot (slot 4), after another sequence's rows.
    const Rows tail = rows.slice(3, 3);
    const auto mixed = layer.run(concat(other.qkv, tail.qkv), concat(other.alpha, tail.alpha),
                                 concat(other.beta, tail.beta), {0, -1, -1, -1, 4, -1, -1},
                                 {-1, -1, -1, 0, -1, -1, 7});
    for (int64_t e = 0; e < 3 * kHv * kS; ++e)
      REQUIRE(mixed[4 * kHv * kS + e] == whole[3 * kHv * kS + e]);
    CHECK(layer.ssm_slot(7) == after);
    // Row by row, each call from the previous row's slot.
    for (int64_t i = 0; i < 6; ++i) {
      const Rows one = rows.slice(i, 1);
      const auto o = layer.run(one.qkv, one.alpha, one.beta, {i == 0 ? 1 : 7}, {7});
      for (int64_t e = 0; e < kHv * kS; ++e) REQUIRE(o[e] == whole[i * kHv * kS + e]);
    }
    CHECK(layer.ssm_slot(7) == after);
  }
}

TEST_CASE("gated_delta_net refuses slots outside the pool and a first row without a state") {
  std::mt19937 rng(53);
  set_head_size(16);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    if (!dev.has_hybrid_ops()) continue;
    Layer layer(dev, rng);
    const Rows rows(rng, 2);
    auto error_of = [&](std::vector<int32_t> in, std::vector<int32_t> out) {
      try {
        layer.run(rows.qkv, rows.alpha, rows.beta, in, out);
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    CHECK(error_of({0, -1}, {kSlots, -1}).find("gated_delta_net: slot 8") != std::string::npos);
    CHECK(error_of({-1, -1}, {0, 1}).find("no state to start from") != std::string::npos);
    CHECK(error_of({0, -2}, {-1, 1}).find("slot -2") != std::string::npos);
  }
}

TEST_CASE("mul_sigmoid gates x by a strided gate, in place too") {
  std::mt19937 rng(54);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    if (!dev.has_hybrid_ops()) continue;
    const int64_t m = 5, n = 48;
    const auto x = random_floats(rng, m * n, 3.0f), g = random_floats(rng, m * 2 * n, 3.0f);
    Buffer bx = upload_vec(dev, x), bg = upload_vec(dev, g);
    const View vx = bx.view(SPECD_DTYPE_F32, m, n);
    dev.mul_sigmoid(vx, bg.view(SPECD_DTYPE_F32, m, n, n * 4, 2 * n * 4), vx);
    const auto y = download_vec<float>(bx, m * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double want = x[i * n + j] / (1 + std::exp(-double(g[i * 2 * n + n + j])));
        CHECK(std::fabs(y[i * n + j] - want) <= 1e-6 * (std::fabs(want) + 1e-3));
      }
  }
}
