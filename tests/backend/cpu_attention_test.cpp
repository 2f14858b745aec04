// The CPU backend's attention is one fixed sequence of f32 operations per row and head
// (plugins/cpu/ops/ops.cpp): 16-lane dot products in k order reduced pairwise, exp_ref
// (plugins/cpu/ops/vexp.hpp, tested in vexp_test.cpp) of each score minus the largest, the weighted
// values summed in key order, one division. With ABI 0.8's options the keys are the row's last
// `window`, and a head's sink joins the largest after the scores (sink > max ? sink : max) and
// adds exp_ref(sink - max) to the sum after the last key. The AVX-512 and AVX2 paths (head_dim 64
// and 128) and the portable one must all give exactly its bits: each case runs on every kernel the
// CPU has. This reference is written from that description; the tests build for the baseline x86-64
// instruction set, which has no fused multiply-add to contract the products into.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "backend_test_util.hpp"
#include "ops/vexp.hpp"

using namespace specd;
using namespace specd::test;

namespace {

float dot16(const float* a, const float* b, int64_t n) {
  float lane[16] = {};
  for (int64_t k = 0; k < n; ++k) lane[k % 16] += a[k] * b[k];  // lane l: k = l, l + 16, ...
  for (int width = 8; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lane[l] += lane[l + width];
  return lane[0];
}

// The ABI 0.8 options of a call: a window (0: none) and whether each head has a sink (random,
// with one far above the scores and one of -inf when there are heads enough).
struct Extras {
  uint32_t window = 0;
  bool sinks = false;
};

// One attention call of m rows on the CPU backend checked value by value against the
// definition, each (row, head) on its own. Row i sees the first prefix[i] cache rows, then
// (unless chain) extra cache rows (a tree): every other one before its own, and its own. Row
// zero_row (if any) has a zero query, so all its scores are 0.
int attention_differences(Device& dev, std::mt19937& rng, uint32_t hd, uint32_t n_head,
                          uint32_t n_kv, const std::vector<int32_t>& prefix, int64_t zero_row,
                          bool chain = false, const Extras& x = {}) {
  const int64_t m = static_cast<int64_t>(prefix.size()), cap = 128;
  const int64_t qc = n_head * hd, kc = n_kv * hd;
  std::vector<int32_t> begin = {0}, extra;
  const int32_t first_extra = *std::max_element(prefix.begin(), prefix.end());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t e = 0; e <= i && !chain; ++e)
      if (e == i || e % 2 == 0) extra.push_back(static_cast<int32_t>(first_extra + e));
    begin.push_back(static_cast<int32_t>(extra.size()));
  }
  auto q = random_floats(rng, m * qc, 2.0f), k = random_floats(rng, cap * kc, 2.0f);
  auto v = random_floats(rng, cap * kc);
  if (zero_row >= 0) std::fill_n(q.begin() + zero_row * qc, qc, 0.0f);
  std::vector<float> sinks = random_floats(rng, n_head, 3.0f);
  if (n_head > 2) {
    sinks[1] = 40.0f;
    sinks[2] = -INFINITY;
  }
  Buffer bs = upload_vec(dev, sinks);
  const View vs = bs.view(SPECD_DTYPE_F32, 1, n_head);
  specd_attention_params p{sizeof(p), n_head, n_kv, hd, 1.0f / std::sqrt(float(hd)), 0, nullptr};
  p.window = x.window;
  if (x.sinks) p.sinks = vs.raw();
  Buffer bq = upload_vec(dev, q), bk = upload_vec(dev, k), bv = upload_vec(dev, v);
  Buffer bp = upload_vec(dev, prefix), bb = upload_vec(dev, begin);
  Buffer be = upload_vec(dev, extra), bo = dev.alloc(m * qc * 4);
  const View ve = be.view(SPECD_DTYPE_I32, 1, static_cast<int64_t>(extra.size()));
  dev.attention(bq.view(SPECD_DTYPE_F32, m, qc), bk.view(SPECD_DTYPE_F32, cap, kc),
                bv.view(SPECD_DTYPE_F32, cap, kc), bp.view(SPECD_DTYPE_I32, 1, m),
                bb.view(SPECD_DTYPE_I32, 1, m + 1), &ve, p, bo.view(SPECD_DTYPE_F32, m, qc));
  const auto out = download_vec<float>(bo, m * qc);
  int differ = 0;
  for (int64_t i = 0; i < m; ++i)
    for (uint32_t h = 0; h < n_head; ++h) {
      std::vector<int64_t> keys = row_keys(prefix, begin, extra, i);
      if (x.window && keys.size() > x.window) keys.erase(keys.begin(), keys.end() - x.window);
      const float* sink = x.sinks ? &sinks[h] : nullptr;
      const int64_t off = static_cast<int64_t>(h / (n_head / n_kv)) * hd;
      const float* qi = q.data() + i * qc + h * hd;
      std::vector<float> s(keys.size());
      float mx = -INFINITY;
      for (size_t j = 0; j < keys.size(); ++j) {
        s[j] = dot16(qi, k.data() + keys[j] * kc + off, hd) * p.scale;
        mx = s[j] > mx ? s[j] : mx;
      }
      if (sink) mx = *sink > mx ? *sink : mx;
      std::vector<float> acc(hd, 0.0f);
      float sum = 0;
      for (size_t j = 0; j < keys.size(); ++j) {
        const float e = specd::cpu::exp_ref(s[j] - mx);
        sum += e;
        for (uint32_t d = 0; d < hd; ++d) acc[d] += e * v[keys[j] * kc + off + d];
      }
      if (sink) sum += specd::cpu::exp_ref(*sink - mx);
      for (uint32_t d = 0; d < hd; ++d) {
        const float want = acc[d] / sum;
        if (std::memcmp(&want, &out[i * qc + h * hd + d], 4) != 0) ++differ;
      }
    }
  return differ;
}

// Runs `check` on a 2-thread CPU device of every kernel this CPU has, the kernel named in the
// messages of its checks.
void on_every_kernel(const std::function<void(Device&)>& check) {
  for (const char* kernel : {"generic", "avx2", "avx512"}) {
    const OpenBackend cpu = open_cpu_kernel(kernel, 2);
    if (!cpu.device) continue;
    INFO("kernel " << kernel);
    check(*cpu.device);
  }
}

// Attention calls over every head_dim, head grouping and prefix case, in that nesting.
struct AttentionSweep {
  std::vector<uint32_t> head_dims;
  std::vector<std::pair<uint32_t, uint32_t>> heads;  // (query heads, KV heads)
  std::vector<std::vector<int32_t>> prefixes;
  size_t zero_case;  // the prefix case whose row `zero_row` has a zero query
  int64_t zero_row;
  bool chain;
  const char* case_name;  // what the messages call a prefix case
  Extras extras = {};
};

void check_sweep(Device& dev, std::mt19937& rng, const AttentionSweep& s) {
  for (uint32_t hd : s.head_dims)
    for (const auto& [n_head, n_kv] : s.heads)
      for (size_t c = 0; c < s.prefixes.size(); ++c) {
        const int64_t zero_row = c == s.zero_case ? s.zero_row : -1;
        const int differ = attention_differences(dev, rng, hd, n_head, n_kv, s.prefixes[c],
                                                 zero_row, s.chain, s.extras);
        CHECK_MESSAGE(differ == 0, "head_dim " << hd << ", " << n_head << " heads, " << n_kv
                                               << " KV heads, " << s.case_name << " case " << c
                                               << ", window " << s.extras.window
                                               << (s.extras.sinks ? ", sinks" : "") << ": "
                                               << differ << " values differ");
      }
}

std::vector<int32_t> chain_prefix(int32_t first, int rows) {
  std::vector<int32_t> p;
  for (int i = 0; i < rows; ++i) p.push_back(first + i);
  return p;
}

}  // namespace

TEST_CASE("cpu attention: every head_dim gives the bits of the fixed-order definition") {
  std::mt19937 rng(31);
  on_every_kernel([&](Device& dev) {
    for (uint32_t hd : {32u, 64u, 80u, 96u, 128u, 256u}) {
      const int differ = attention_differences(dev, rng, hd, 4, 2, std::vector<int32_t>(5, 37), -1);
      CHECK_MESSAGE(differ == 0, "head_dim " << hd << ": " << differ << " values differ");
    }
  });
}

// The AVX-512 kernels take 16 keys at a time, the AVX2 ones 8, and both the query heads of a KV
// head together: key counts below, at and past multiples of 8 and 16, rows of one call with
// different key counts (growing and shrinking from row to row, within a task's range of rows),
// groups of 1 to 4 query heads per KV head and a row whose scores are all zero.
TEST_CASE("cpu attention: key blocks, GQA groups and rows of different lengths keep the bits") {
  std::mt19937 rng(47);
  const AttentionSweep sweep{{32, 64, 128},
                             {{4, 4}, {4, 2}, {6, 2}, {8, 2}},
                             {{0},
                              {15},
                              {16},
                              {31, 31},
                              {1, 14, 15, 16, 17, 32, 33, 47, 48, 64},
                              {64, 48, 33, 33, 17, 2, 1, 0, 16, 16},
                              {7, 8, 9, 23, 24, 25}},
                             /*zero_case=*/4,
                             /*zero_row=*/3,
                             /*chain=*/false,
                             "prefix"};
  on_every_kernel([&](Device& dev) { check_sweep(dev, rng, sweep); });
}

// Rows that see their prefix only (decoding and chain verification) go as lanes of (row, query
// head) pairs of one KV head when a call has enough of them, 16 at a time with AVX-512 (head_dim
// 64 and 128), 8 with AVX2 (and AVX-512's other head_dims): every GQA group from 1 to 16 (width /
// group rows per block, a partial last block; groups wider than 8 stay per head on AVX2), key
// counts that differ from lane to lane within a block (the longest sets how many keys the block
// reads; the keys every lane attends skip the masks), calls just below and at the sizes that
// switch to lanes, and a row whose scores are all zero.
TEST_CASE("cpu attention: chain rows as lanes of a KV head keep the bits") {
  std::mt19937 rng(53);
  const AttentionSweep sweep{{64, 128, 80},
                             {{16, 16}, {16, 8}, {16, 4}, {6, 2}, {16, 2}, {16, 1}, {8, 1}},
                             {chain_prefix(65, 8),
                              chain_prefix(1, 20),
                              chain_prefix(30, 7),
                              chain_prefix(30, 3),
                              chain_prefix(30, 4),
                              chain_prefix(100, 17),
                              {5, 70, 2, 33, 1, 16, 17, 64}},
                             /*zero_case=*/1,
                             /*zero_row=*/5,
                             /*chain=*/true,
                             "chain"};
  on_every_kernel([&](Device& dev) { check_sweep(dev, rng, sweep); });
}

// ABI 0.8: windows of 1 key, of fewer keys than a kernel's block, cutting a tree's extras or
// its prefix, longer than every row; sinks with and without a window. Tree rows go through
// the per-(row, head) kernels, chains of enough rows through the lanes of a KV head, whose
// rows then start at different keys.
TEST_CASE("cpu attention: windows and sinks keep the bits of the definition on every kernel") {
  std::mt19937 rng(59);
  for (const Extras x : {Extras{1, false}, Extras{5, false}, Extras{17, true}, Extras{0, true},
                         Extras{3, true}, Extras{200, true}}) {
    const AttentionSweep tree{{32, 64, 128},
                              {{4, 4}, {4, 2}, {8, 2}},
                              {{15}, {1, 14, 17, 33, 48}, {64, 33, 2, 1, 16}},
                              /*zero_case=*/1,
                              /*zero_row=*/2,
                              /*chain=*/false,
                              "prefix",
                              x};
    const AttentionSweep chain{{64, 128, 80},
                               {{16, 16}, {16, 4}, {16, 1}, {6, 2}},
                               {chain_prefix(65, 8),
                                chain_prefix(1, 20),
                                chain_prefix(100, 17),
                                {5, 70, 2, 33, 1, 16, 17, 64}},
                               /*zero_case=*/1,
                               /*zero_row=*/5,
                               /*chain=*/true,
                               "chain",
                               x};
    on_every_kernel([&](Device& dev) {
      check_sweep(dev, rng, tree);
      check_sweep(dev, rng, chain);
    });
  }
}
