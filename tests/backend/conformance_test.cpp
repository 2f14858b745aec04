// Every op of every available backend against a naive double-precision reference.
// Tolerances are relative to the magnitude of the terms summed (stated per op).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <numeric>
#include <utility>

#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

namespace {

// max |a - b| / (scale + tiny) over all elements, scale per element.
void check_close(const std::vector<float>& got, const std::vector<double>& want,
                 const std::vector<double>& scale, double tol, const std::string& what) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]) / (scale[i] + 1e-30);
    if (!(err <= worst)) {
      worst = err;
      at = i;
    }
  }
  INFO(what << ": worst relative error " << worst << " at " << at << " (got " << got[at]
            << ", want " << want[at] << ")");
  CHECK(worst <= tol);
}

}  // namespace

TEST_CASE("matmul matches a double reference for every weight dtype, small and large m") {
  const ExactQuant exact;  // the integer family has its own test (qint_test.cpp)
  std::mt19937 rng(1);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    for (specd_dtype dt : kWeightTypes) {
      for (int64_t m : {1, 3, 17, 64, 65, 130}) {
        for (int64_t kk : test_row_lengths(dt)) {
          const int64_t n = 37;
          auto x = random_floats(rng, m * kk);
          auto wf = random_floats(rng, n * kk);
          auto wb = encode(dt, wf, n, kk);
          auto wd = decode(dt, wb, n, kk);
          Buffer bx = upload_vec(dev, x), bw = upload_vec(dev, wb), by = dev.alloc(m * n * 4);
          dev.matmul(bx.view(SPECD_DTYPE_F32, m, kk), bw.view(dt, n, kk),
                     by.view(SPECD_DTYPE_F32, m, n));
          auto y = download_vec<float>(by, m * n);
          std::vector<double> ref(m * n), scale(m * n);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double s = 0, a = 0;
              for (int64_t c = 0; c < kk; ++c) {
                s += static_cast<double>(x[i * kk + c]) * wd[j * kk + c];
                a += std::fabs(static_cast<double>(x[i * kk + c]) * wd[j * kk + c]);
              }
              ref[i * n + j] = s;
              scale[i * n + j] = a;
            }
          check_close(y, ref, scale, 1e-5,
                      ob.backend->name() + " matmul " + dtype_name(dt) + " m=" + std::to_string(m) +
                          " k=" + std::to_string(kk));
        }
      }
    }
  }
}

TEST_CASE("matmul writes into a strided output view (rows of a larger matrix)") {
  std::mt19937 rng(2);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t m = 5, k = 64, n = 16, ld = 40;
    auto x = random_floats(rng, m * k);
    auto w = random_floats(rng, n * k);
    std::vector<float> canvas(m * ld, 7.0f);
    Buffer bx = upload_vec(dev, x), bw = upload_vec(dev, w), by = upload_vec(dev, canvas);
    dev.matmul(bx.view(SPECD_DTYPE_F32, m, k), bw.view(SPECD_DTYPE_F32, n, k),
               by.view(SPECD_DTYPE_F32, m, n, 8 * 4, ld * 4));
    auto y = download_vec<float>(by, m * ld);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ld; ++j) {
        if (j >= 8 && j < 8 + n) {
          double s = 0;
          for (int64_t c = 0; c < k; ++c) s += double(x[i * k + c]) * w[(j - 8) * k + c];
          CHECK(std::fabs(y[i * ld + j] - s) < 1e-4);
        } else {
          CHECK(y[i * ld + j] == 7.0f);
        }
      }
  }
}

TEST_CASE("rms_norm, swiglu, add") {
  std::mt19937 rng(3);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t m = 7, n = 200;
    auto x = random_floats(rng, m * n, 3.0f);
    auto w = random_floats(rng, n);
    auto u = random_floats(rng, m * n);
    Buffer bx = upload_vec(dev, x), bw = upload_vec(dev, w), bu = upload_vec(dev, u);
    Buffer by = dev.alloc(m * n * 4);
    const View vx = bx.view(SPECD_DTYPE_F32, m, n), vy = by.view(SPECD_DTYPE_F32, m, n),
               vu = bu.view(SPECD_DTYPE_F32, m, n);

    dev.rms_norm(vx, bw.view(SPECD_DTYPE_F32, 1, n), 1e-5f, vy);
    auto y = download_vec<float>(by, m * n);
    std::vector<double> ref(m * n), scale(m * n);
    for (int64_t i = 0; i < m; ++i) {
      double ss = 0;
      for (int64_t j = 0; j < n; ++j) ss += double(x[i * n + j]) * x[i * n + j];
      const double r = 1.0 / std::sqrt(ss / n + 1e-5);
      for (int64_t j = 0; j < n; ++j) {
        ref[i * n + j] = x[i * n + j] * r * w[j];
        scale[i * n + j] = std::fabs(ref[i * n + j]);
      }
    }
    check_close(y, ref, scale, 1e-5, "rms_norm");

    dev.swiglu(vx, vu, vy);
    y = download_vec<float>(by, m * n);
    for (int64_t e = 0; e < m * n; ++e) {
      const double g = x[e];
      ref[e] = g / (1 + std::exp(-g)) * u[e];
      scale[e] = std::fabs(ref[e]);
    }
    check_close(y, ref, scale, 1e-5, "swiglu");

    dev.add(vx, vu, vy);
    y = download_vec<float>(by, m * n);
    for (int64_t e = 0; e < m * n; ++e) {
      ref[e] = double(x[e]) + u[e];
      scale[e] = std::fabs(x[e]) + std::fabs(u[e]);
    }
    check_close(y, ref, scale, 1e-6, "add");

    dev.add(vx, vu, vx);  // in place
    auto x2 = download_vec<float>(bx, m * n);
    for (int64_t e = 0; e < m * n; ++e) CHECK(x2[e] == y[e]);
  }
}

TEST_CASE("rope rotates adjacent pairs at base^(-2i/n_rot), partial rotation passes through") {
  std::mt19937 rng(4);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t m = 4, n_head = 3, hd = 16;
    for (uint32_t n_rot : {16u, 8u}) {
      auto x = random_floats(rng, m * n_head * hd);
      std::vector<int32_t> pos = {0, 1, 17, 500};
      Buffer bx = upload_vec(dev, x), bp = upload_vec(dev, pos);
      specd_rope_params p{};
      p.struct_size = sizeof(p);
      p.n_head = n_head;
      p.head_dim = hd;
      p.n_rot = n_rot;
      p.base = 10000.0f;
      p.mode = SPECD_ROPE_NORMAL;
      p.freq_scale = 1.0f;
      dev.rope(bx.view(SPECD_DTYPE_F32, m, n_head * hd), bp.view(SPECD_DTYPE_I32, 1, m), p);
      auto y = download_vec<float>(bx, x.size());
      std::vector<double> ref(x.size()), scale(x.size());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t h = 0; h < n_head; ++h)
          for (int64_t j = 0; j < hd / 2; ++j) {
            const int64_t e = i * n_head * hd + h * hd + 2 * j;
            double c = 1, s = 0;
            if (2 * j < n_rot) {
              const double th = pos[i] * std::pow(10000.0, -2.0 * j / n_rot);
              c = std::cos(th);
              s = std::sin(th);
            }
            ref[e] = x[e] * c - x[e + 1] * s;
            ref[e + 1] = x[e] * s + x[e + 1] * c;
            scale[e] = scale[e + 1] = std::fabs(x[e]) + std::fabs(x[e + 1]);
          }
      check_close(y, ref, scale, 1e-5, "rope n_rot=" + std::to_string(n_rot));
    }
  }
}

TEST_CASE("get_rows gathers rows of every table dtype") {
  std::mt19937 rng(5);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t V = 11, d = 256;
    std::vector<int32_t> ids = {3, 0, 10, 3};
    for (specd_dtype dt : kWeightTypes) {
      auto tf = random_floats(rng, V * d);
      auto tb = encode(dt, tf, V, d);
      auto td = decode(dt, tb, V, d);
      Buffer bt = upload_vec(dev, tb), bi = upload_vec(dev, ids), by = dev.alloc(4 * d * 4);
      dev.get_rows(bt.view(dt, V, d), bi.view(SPECD_DTYPE_I32, 1, 4),
                   by.view(SPECD_DTYPE_F32, 4, d));
      auto y = download_vec<float>(by, 4 * d);
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < d; ++j) CHECK(y[i * d + j] == td[ids[i] * d + j]);
    }
    std::vector<int32_t> bad = {11};
    Buffer bt = dev.alloc(V * d * 4), bi = upload_vec(dev, bad), by = dev.alloc(d * 4);
    CHECK_THROWS_AS(dev.get_rows(bt.view(SPECD_DTYPE_F32, V, d), bi.view(SPECD_DTYPE_I32, 1, 1),
                                 by.view(SPECD_DTYPE_F32, 1, d)),
                    Error);
  }
}

namespace {

struct TreeMask {
  std::vector<int32_t> prefix, begin, extra;
};

// Row i of a tree appended at cache rows P..P+m-1: prefix P, extras = ancestors then itself.
TreeMask tree_mask(int32_t P, const std::vector<int32_t>& parents) {
  TreeMask t;
  t.begin.push_back(0);
  for (size_t i = 0; i < parents.size(); ++i) {
    std::vector<int32_t> path;
    for (int32_t a = static_cast<int32_t>(i); a >= 0; a = parents[a]) path.push_back(P + a);
    std::reverse(path.begin(), path.end());
    t.prefix.push_back(P);
    t.extra.insert(t.extra.end(), path.begin(), path.end());
    t.begin.push_back(static_cast<int32_t>(t.extra.size()));
  }
  return t;
}

// `p` with `sinks` (one per query head; empty: none) uploaded as its sinks view.
std::vector<float> run_attention(Device& dev, const std::vector<float>& q,
                                 const std::vector<float>& k, const std::vector<float>& v,
                                 int64_t cap, const TreeMask& t, const specd_attention_params& p,
                                 const std::vector<float>& sinks = {}) {
  const int64_t m = static_cast<int64_t>(t.prefix.size());
  const int64_t qc = p.n_head * p.head_dim, kc = p.n_head_kv * p.head_dim;
  Buffer bq = upload_vec(dev, q), bk = upload_vec(dev, k), bv = upload_vec(dev, v);
  Buffer bp = upload_vec(dev, t.prefix), bb = upload_vec(dev, t.begin);
  Buffer be = upload_vec(dev, t.extra), bo = dev.alloc(m * qc * 4);
  Buffer bs = upload_vec(dev, sinks);
  const View ve = be.view(SPECD_DTYPE_I32, 1, std::max<int64_t>(1, t.extra.size()));
  const View vs = bs.view(SPECD_DTYPE_F32, 1, std::max<int64_t>(1, sinks.size()));
  specd_attention_params with_sinks = p;
  if (!sinks.empty()) with_sinks.sinks = vs.raw();
  dev.attention(bq.view(SPECD_DTYPE_F32, m, qc), bk.view(SPECD_DTYPE_F32, cap, kc),
                bv.view(SPECD_DTYPE_F32, cap, kc), bp.view(SPECD_DTYPE_I32, 1, m),
                bb.view(SPECD_DTYPE_I32, 1, m + 1), t.extra.empty() ? nullptr : &ve, with_sinks,
                bo.view(SPECD_DTYPE_F32, m, qc));
  return download_vec<float>(bo, m * qc);
}

// A random attention problem: a tree of `parents` appended after `P` cache rows (of `cap`),
// random queries (a row per node), keys and values, scores scaled by 1 / sqrt(head_dim); no
// window and no sinks until a test sets p.window and `sinks` (one per query head).
struct TreeAttention {
  specd_attention_params p;
  int64_t P, cap;
  TreeMask t;
  std::vector<float> q, k, v;
  std::vector<float> sinks;

  TreeAttention(std::mt19937& rng, uint32_t n_head, uint32_t n_kv, uint32_t hd, int64_t P_,
                int64_t cap_, const std::vector<int32_t>& parents)
      : p{sizeof(p), n_head, n_kv, hd, 1.0f / std::sqrt(float(hd)), 0, nullptr},
        P(P_),
        cap(cap_),
        t(tree_mask(static_cast<int32_t>(P_), parents)),
        q(random_floats(rng, int64_t(parents.size()) * n_head * hd)),
        k(random_floats(rng, cap_ * n_kv * hd)),
        v(random_floats(rng, cap_ * n_kv * hd)) {}

  int64_t rows() const { return static_cast<int64_t>(t.prefix.size()); }
  // Attention of the query rows `queries` over this problem's keys and values under `mask`.
  std::vector<float> run(Device& dev, const std::vector<float>& queries,
                         const TreeMask& mask) const {
    return run_attention(dev, queries, k, v, cap, mask, p, sinks);
  }
  // The double-precision reference of run(dev, q, t) and the scale of each value's error.
  void reference(std::vector<double>& out, std::vector<double>& mag) const {
    std::vector<std::vector<int64_t>> keys;
    for (int64_t i = 0; i < rows(); ++i) keys.push_back(row_keys(t.prefix, t.begin, t.extra, i));
    const AttentionShape shape{p.n_head, p.n_head_kv, p.head_dim, p.scale, p.window, sinks};
    attention_reference(q, k, v, keys, shape, out, mag);
  }
};

}  // namespace

TEST_CASE("attention with GQA and a tree mask matches the reference") {
  std::mt19937 rng(6);
  for (auto& ob : open_backends()) {
    const TreeAttention problem(rng, /*n_head=*/4, /*n_kv=*/2, /*hd=*/32, /*P=*/9, /*cap=*/32,
                                {-1, 0, 0, 1, 2, 4});
    auto out = problem.run(*ob.device, problem.q, problem.t);
    std::vector<double> ref, scale;
    problem.reference(ref, scale);
    check_close(out, ref, scale, 1e-5, ob.backend->name() + " attention");
  }
}

TEST_CASE("attention row results are batch invariant and chain masks equal tree masks") {
  std::mt19937 rng(7);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    // hd = 64: the scale is 0.125.
    const TreeAttention a(rng, /*n_head=*/4, /*n_kv=*/1, /*hd=*/64, /*P=*/20, /*cap=*/64,
                          {-1, 0, 1, 0, 3, 2, 5});
    const TreeMask& t = a.t;
    const std::vector<float>& q = a.q;
    const int64_t P = a.P;
    auto all = a.run(dev, q, t);
    const int64_t qc = a.p.n_head * a.p.head_dim;
    for (int64_t i = 0; i < a.rows(); ++i) {
      // Row i alone, with the same key sequence.
      TreeMask one;
      one.prefix = {t.prefix[i]};
      one.begin = {0, t.begin[i + 1] - t.begin[i]};
      one.extra.assign(t.extra.begin() + t.begin[i], t.extra.begin() + t.begin[i + 1]);
      std::vector<float> qi(q.begin() + i * qc, q.begin() + (i + 1) * qc);
      auto alone = a.run(dev, qi, one);
      CHECK(std::memcmp(alone.data(), all.data() + i * qc, qc * 4) == 0);
    }
    // A chain expressed as a prefix equals the same keys listed as extras.
    TreeMask as_prefix{{static_cast<int32_t>(P + 3)}, {0, 0}, {}};
    TreeMask as_extra{
        {static_cast<int32_t>(P)}, {0, 3}, {int32_t(P), int32_t(P + 1), int32_t(P + 2)}};
    std::vector<float> q0(q.begin(), q.begin() + qc);
    auto by_prefix = a.run(dev, q0, as_prefix);
    auto by_extra = a.run(dev, q0, as_extra);
    CHECK(std::memcmp(by_prefix.data(), by_extra.data(), qc * 4) == 0);
  }
}

namespace {

// Sinks of the ABI 0.8 tests, one per query head: none; moderate (within the scores' range);
// far above the scores (they take almost all the weight); far below (no weight: -1e30, -inf).
std::vector<std::pair<const char*, std::vector<float>>> sink_cases(std::mt19937& rng,
                                                                   uint32_t n_head) {
  std::vector<float> below(n_head, -1e30f);
  below[0] = -INFINITY;
  return {{"no sinks", {}},
          {"moderate sinks", random_floats(rng, n_head, 2.0f)},
          {"large sinks", std::vector<float>(n_head, 30.0f)},
          {"very negative sinks", below}};
}

}  // namespace

// ABI 0.8: a window keeps each row's last `window` keys, in its logical order (prefix rows,
// then extras): 1, windows that end inside a tree's extras, that cut at the prefix/extras
// boundary or through the prefix, that span a 32-key tile, and larger than any sequence.
TEST_CASE("attention with a sliding window and sinks matches the reference") {
  std::mt19937 rng(41);
  for (auto& ob : open_backends()) {
    // Tree rows attend P + depth keys: 10..14 after 9 rows, 41..45 after 40.
    TreeAttention small(rng, /*n_head=*/4, /*n_kv=*/2, /*hd=*/32, /*P=*/9, /*cap=*/32,
                        {-1, 0, 0, 1, 2, 4, 5});
    TreeAttention large(rng, /*n_head=*/8, /*n_kv=*/2, /*hd=*/64, /*P=*/40, /*cap=*/64,
                        {-1, 0, 0, 1, 2, 4, 5});
    for (TreeAttention* problem : {&small, &large}) {
      for (const auto& [sink_name, sinks] : sink_cases(rng, problem->p.n_head)) {
        for (uint32_t window : {0u, 1u, 2u, 3u, 5u, 6u, 33u, 43u, 1000u}) {
          problem->p.window = window;
          problem->sinks = sinks;
          auto out = problem->run(*ob.device, problem->q, problem->t);
          std::vector<double> ref, scale;
          problem->reference(ref, scale);
          check_close(out, ref, scale, 1e-5,
                      ob.backend->name() + " attention, head_dim " +
                          std::to_string(problem->p.head_dim) + ", window " +
                          std::to_string(window) + ", " + sink_name);
        }
      }
    }
  }
}

// exp(sink - max) of a sink 88.85 above every score (all zero) would overflow f32 if the
// maximum left the sink out; with it, each key weighs e^-88.85 (a subnormal, still within 1e-6
// of its value) against the sink's 1. Values of 1e20 keep the products normal.
TEST_CASE("attention: a sink above every score joins the maximum, never overflowing") {
  std::mt19937 rng(42);
  for (auto& ob : open_backends()) {
    TreeAttention problem(rng, /*n_head=*/2, /*n_kv=*/1, /*hd=*/32, /*P=*/20, /*cap=*/32, {-1});
    std::fill(problem.q.begin(), problem.q.end(), 0.0f);
    for (float& x : problem.v) x *= 1e20f;
    problem.sinks = {88.85f, 88.85f};
    auto out = problem.run(*ob.device, problem.q, problem.t);
    std::vector<double> ref, scale;
    problem.reference(ref, scale);
    check_close(out, ref, scale, 1e-5, ob.backend->name() + " attention, sink above the scores");
  }
}

// Batch invariance with a window and sinks: a row alone gives the bits it gives among others,
// and rows whose windows hold the same keys give the same bits whatever came before the
// window (a 50-key chain, a 45-key row of prefix and extras, a 37-key tree path: their last
// 15 keys are rows 35..49, which start at different places of their 32-key tiles).
TEST_CASE("attention with a window and sinks: a row's bits depend on its window's keys alone") {
  std::mt19937 rng(43);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    TreeAttention a(rng, /*n_head=*/4, /*n_kv=*/2, /*hd=*/64, /*P=*/40, /*cap=*/64,
                    {-1, 0, 1, 0, 3, 2, 5});
    a.p.window = 15;
    a.sinks = random_floats(rng, a.p.n_head, 2.0f);
    const TreeMask& t = a.t;
    const int64_t qc = a.p.n_head * a.p.head_dim;
    auto all = a.run(dev, a.q, t);
    for (int64_t i = 0; i < a.rows(); ++i) {
      TreeMask one{{t.prefix[i]}, {0, t.begin[i + 1] - t.begin[i]}, {}};
      one.extra.assign(t.extra.begin() + t.begin[i], t.extra.begin() + t.begin[i + 1]);
      std::vector<float> qi(a.q.begin() + i * qc, a.q.begin() + (i + 1) * qc);
      auto alone = a.run(dev, qi, one);
      CHECK_MESSAGE(std::memcmp(alone.data(), all.data() + i * qc, qc * 4) == 0,
                    ob.backend->name() << ": row " << i << " alone differs");
    }
    std::vector<int32_t> tail(15);
    std::iota(tail.begin(), tail.end(), 35);
    TreeMask same{{50, 30, 20}, {0, 0, 15, 32}, tail};
    same.extra.insert(same.extra.end(), {22, 30});
    same.extra.insert(same.extra.end(), tail.begin(), tail.end());
    std::vector<float> q3;
    for (int r = 0; r < 3; ++r) q3.insert(q3.end(), a.q.begin(), a.q.begin() + qc);
    auto rows = a.run(dev, q3, same);
    CHECK_MESSAGE(std::memcmp(rows.data(), rows.data() + qc, qc * 4) == 0,
                  ob.backend->name() << ": a chain's window and a tree row's differ");
    CHECK_MESSAGE(std::memcmp(rows.data(), rows.data() + 2 * qc, qc * 4) == 0,
                  ob.backend->name() << ": a chain's window and a tree path's differ");
  }
}

// The 0.8 fields are read only when struct_size covers them: params of the 0.1 size (what a
// host of minor 7 or older passes) mean what they meant, whatever lies past them; and sinks
// must be f32 [1, n_head] inside their buffer, else INVALID_ARGUMENT naming them.
TEST_CASE("attention reads params of the 0.1 size as before and checks the sinks' view") {
  std::mt19937 rng(44);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    CAPTURE(ob.backend->name());
    TreeAttention a(rng, /*n_head=*/4, /*n_kv=*/2, /*hd=*/32, /*P=*/9, /*cap=*/32, {-1, 0, 1});
    const auto plain = a.run(dev, a.q, a.t);
    Buffer bad = dev.alloc(16);
    const View f16_sinks = bad.view(SPECD_DTYPE_F16, 1, 4);
    a.p.struct_size = offsetof(specd_attention_params, window);
    a.p.window = 1;
    a.p.sinks = f16_sinks.raw();  // past struct_size: never read
    const auto old = a.run(dev, a.q, a.t);
    CHECK(std::memcmp(old.data(), plain.data(), plain.size() * 4) == 0);
    a.p.struct_size = offsetof(specd_attention_params, window) - 1;
    CHECK_THROWS_WITH_AS(a.run(dev, a.q, a.t),
                         doctest::Contains("attention: params struct_size too small"), Error);

    a.p = {sizeof(a.p), 4, 2, 32, 0.125f, 0, nullptr};
    auto refused = [&](const View& sinks) {
      a.p.sinks = sinks.raw();
      try {
        a.run(dev, a.q, a.t);
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    CHECK(refused(f16_sinks).find("attention: params.sinks must be f32, not f16") !=
          std::string::npos);
    CHECK(refused(bad.view(SPECD_DTYPE_F32, 1, 3))
              .find("attention: params.sinks is [1, 3], expected [1, n_head = 4]") !=
          std::string::npos);
    CHECK(refused(bad.view(SPECD_DTYPE_F32, 1, 4, 8))
              .find("attention: params.sinks: view [1, 4] at offset 8 exceeds its buffer") !=
          std::string::npos);
  }
}

TEST_CASE("copy_rows gathers and compacts in place") {
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t rows = 10, cols = 8;
    std::vector<float> src(rows * cols);
    for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
    Buffer bs = upload_vec(dev, src);
    std::vector<int32_t> idx = {5, 7, 9};  // kept pending rows 5, 7, 9 -> rows 4, 5, 6
    Buffer bi = upload_vec(dev, idx);
    const View all = bs.view(SPECD_DTYPE_F32, rows, cols);
    dev.copy_rows(all, bi.view(SPECD_DTYPE_I32, 1, 3), all.slice_rows(4, 3));
    auto got = download_vec<float>(bs, rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t from = r < 4 ? r : r < 7 ? idx[r - 4] : r;
        CHECK(got[r * cols + c] == float(from * cols + c));
      }
    // Out-of-place gather into another buffer, any order.
    std::vector<int32_t> perm = {2, 0, 2};
    Buffer bp = upload_vec(dev, perm), bd = dev.alloc(3 * cols * 4);
    dev.copy_rows(all, bp.view(SPECD_DTYPE_I32, 1, 3), bd.view(SPECD_DTYPE_F32, 3, cols));
    auto g2 = download_vec<float>(bd, 3 * cols);
    for (int64_t r = 0; r < 3; ++r) CHECK(g2[r * cols] == got[perm[r] * cols]);
  }
}

// The op contracts (specd/cpp/op_contract.hpp) run in the SDK's adapter before a backend's
// method: calls straight through the vtable with what the host never passes.
TEST_CASE("the adapter refuses missing views and broken shapes before the backend runs") {
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    CAPTURE(ob.backend->name());
    const specd_backend_vtable& vt = dev.backend().vtable();
    Buffer a = dev.alloc(64 * 4), y = dev.alloc(64 * 4);
    const View x = a.view(SPECD_DTYPE_F32, 2, 8), out = y.view(SPECD_DTYPE_F32, 2, 8);
    const View w_bad = a.view(SPECD_DTYPE_F32, 1, 4);
    auto message = [&](specd_status* s) {
      REQUIRE(s != nullptr);
      std::string m;
      try {
        dev.backend().check(s, nullptr);
      } catch (const Error& e) {
        m = e.what();
      }
      return m;
    };
    CHECK(message(vt.rms_norm(dev.handle(), nullptr, w_bad.raw(), 1e-5f, out.raw()))
              .find("rms_norm: x: missing view") != std::string::npos);
    CHECK(message(vt.rms_norm(dev.handle(), x.raw(), w_bad.raw(), 1e-5f, out.raw()))
              .find("rms_norm: weight must be [1, n]") != std::string::npos);
    CHECK(message(vt.rms_norm(dev.handle(), x.raw(), a.view(SPECD_DTYPE_F32, 1, 8).raw(), -1.0f,
                              out.raw()))
              .find("eps must be >= 0") != std::string::npos);
    specd_attention_params p{};
    p.struct_size = sizeof(p);
    p.n_head = p.n_head_kv = 1;
    p.head_dim = 8;
    CHECK(message(vt.attention(dev.handle(), x.raw(), x.raw(), x.raw(), nullptr, &p, out.raw()))
              .find("attention: missing mask") != std::string::npos);
    CHECK(message(vt.swiglu(dev.handle(), x.raw(), a.view(SPECD_DTYPE_F32, 1, 8).raw(), out.raw()))
              .find("swiglu: up is [1, 8] but gate is [2, 8]") != std::string::npos);
  }
}

TEST_CASE("bad arguments are reported with the op and argument, never a crash") {
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    Buffer a = dev.alloc(64 * 4), b = dev.alloc(64 * 4), y = dev.alloc(64 * 4);
    // k mismatch
    try {
      dev.matmul(a.view(SPECD_DTYPE_F32, 2, 32), b.view(SPECD_DTYPE_F32, 2, 16),
                 y.view(SPECD_DTYPE_F32, 2, 2));
      FAIL("no error");
    } catch (const Error& e) {
      const std::string msg = e.what();
      CHECK(msg.find("matmul") != std::string::npos);
      CHECK(msg.find(ob.backend->id()) != std::string::npos);
    }
    // view past the end of its buffer
    CHECK_THROWS_AS(dev.add(a.view(SPECD_DTYPE_F32, 2, 64), b.view(SPECD_DTYPE_F32, 2, 64),
                            y.view(SPECD_DTYPE_F32, 2, 64)),
                    Error);
    // q8_0 row length not a multiple of 32
    CHECK_THROWS_AS(dev.matmul(a.view(SPECD_DTYPE_F32, 1, 16), b.view(SPECD_DTYPE_Q8_0, 1, 16),
                               y.view(SPECD_DTYPE_F32, 1, 1)),
                    Error);
    // unsupported dtype for an activation
    CHECK_THROWS_AS(dev.add(a.view(SPECD_DTYPE_F16, 1, 8), b.view(SPECD_DTYPE_F32, 1, 8),
                            y.view(SPECD_DTYPE_F32, 1, 8)),
                    Error);
  }
}
