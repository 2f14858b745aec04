// The CPU backend's attention is one fixed sequence of f32 operations per row and head
// (plugins/cpu/ops.cpp): 16-lane dot products in k order reduced pairwise, exp_ref
// (plugins/cpu/vexp.hpp, tested in vexp_test.cpp) of each score minus the largest, the weighted
// values summed in key order, one division. The AVX-512 path (head_dim 64 and 128) and the portable
// one must both give exactly its bits. This reference is written from that description; the tests
// build for the baseline x86-64 instruction set, which has no fused multiply-add to contract the
// products into.
#include <cmath>
#include <cstring>

#include "../../plugins/cpu/vexp.hpp"
#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

namespace {

float dot16(const float* a, const float* b, int64_t n) {
  float lane[16] = {};
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    for (int l = 0; l < 16; ++l) lane[l] += a[k + l] * b[k + l];
  for (int l = 0; k + l < n; ++l) lane[l] += a[k + l] * b[k + l];
  for (int width = 8; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lane[l] += lane[l + width];
  return lane[0];
}

}  // namespace

TEST_CASE("cpu attention: every head_dim gives the bits of the fixed-order definition") {
  std::mt19937 rng(31);
  Backend backend(registry().require("cpu", SPECD_KIND_BACKEND));
  DeviceOptions opt;
  opt.threads = 2;
  auto dev = backend.open(opt);
  for (uint32_t hd : {32u, 64u, 80u, 128u}) {
    const uint32_t n_head = 4, n_kv = 2;
    const int64_t m = 5, P = 37, cap = 64;
    const int64_t qc = n_head * hd, kc = n_kv * hd;
    // Row i sees the prefix and then some of the later cache rows (a tree): every other one
    // before its own.
    std::vector<int32_t> prefix(m, static_cast<int32_t>(P)), begin = {0}, extra;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t e = 0; e <= i; ++e)
        if (e == i || e % 2 == 0) extra.push_back(static_cast<int32_t>(P + e));
      begin.push_back(static_cast<int32_t>(extra.size()));
    }
    auto q = random_floats(rng, m * qc, 2.0f), k = random_floats(rng, cap * kc, 2.0f);
    auto v = random_floats(rng, cap * kc);
    specd_attention_params p{sizeof(p), n_head, n_kv, hd, 1.0f / std::sqrt(float(hd))};
    Buffer bq = upload_vec(*dev, q), bk = upload_vec(*dev, k), bv = upload_vec(*dev, v);
    Buffer bp = upload_vec(*dev, prefix), bb = upload_vec(*dev, begin);
    Buffer be = upload_vec(*dev, extra), bo = dev->alloc(m * qc * 4);
    const View ve = be.view(SPECD_DTYPE_I32, 1, static_cast<int64_t>(extra.size()));
    dev->attention(bq.view(SPECD_DTYPE_F32, m, qc), bk.view(SPECD_DTYPE_F32, cap, kc),
                   bv.view(SPECD_DTYPE_F32, cap, kc), bp.view(SPECD_DTYPE_I32, 1, m),
                   bb.view(SPECD_DTYPE_I32, 1, m + 1), &ve, p, bo.view(SPECD_DTYPE_F32, m, qc));
    const auto out = download_vec<float>(bo, m * qc);
    int differ = 0;
    for (int64_t i = 0; i < m; ++i)
      for (uint32_t h = 0; h < n_head; ++h) {
        std::vector<int64_t> keys;
        for (int64_t j = 0; j < P; ++j) keys.push_back(j);
        for (int32_t e = begin[i]; e < begin[i + 1]; ++e) keys.push_back(extra[e]);
        const int64_t off = static_cast<int64_t>(h / (n_head / n_kv)) * hd;
        const float* qi = q.data() + i * qc + h * hd;
        std::vector<float> s(keys.size());
        float mx = -INFINITY;
        for (size_t j = 0; j < keys.size(); ++j) {
          s[j] = dot16(qi, k.data() + keys[j] * kc + off, hd) * p.scale;
          mx = s[j] > mx ? s[j] : mx;
        }
        std::vector<float> acc(hd, 0.0f);
        float sum = 0;
        for (size_t j = 0; j < keys.size(); ++j) {
          const float e = specd::cpu::exp_ref(s[j] - mx);
          sum += e;
          for (uint32_t d = 0; d < hd; ++d) acc[d] += e * v[keys[j] * kc + off + d];
        }
        for (uint32_t d = 0; d < hd; ++d) {
          const float want = acc[d] / sum;
          if (std::memcmp(&want, &out[i * qc + h * hd + d], 4) != 0) ++differ;
        }
      }
    CHECK_MESSAGE(differ == 0, "head_dim " << hd << ": " << differ << " values differ");
  }
}
