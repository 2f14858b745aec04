// The ABI 0.5 ops every backend runs models with: attention over a paged KV pool and the row
// scatter that fills it. A sequence's rows read through its block table give, bit for bit,
// what `attention` gives over the same rows laid out contiguously, with rows of several
// sequences (different tables, tree masks, chains long enough for the CPU's lane kernel) in
// one call, with and without the ABI 0.8 window and sinks; and bad tables or indices are
// refused naming the op.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

namespace {

struct Seq {
  int32_t committed;             // logical rows before the new ones
  std::vector<int32_t> parents;  // of the new rows (-1: the last committed row)
  std::vector<int32_t> blocks;   // its table
};

// The mask of a sequence's new rows (the host's batch_mask rule, written out again here).
void append_mask(const Seq& s, std::vector<int32_t>& prefix, std::vector<int32_t>& begin,
                 std::vector<int32_t>& extra) {
  const int32_t m = static_cast<int32_t>(s.parents.size());
  for (int32_t i = 0; i < m; ++i) {
    std::vector<int32_t> path;
    for (int32_t a = i; a >= 0; a = s.parents[a]) path.push_back(a);
    std::reverse(path.begin(), path.end());
    size_t lead = 0;
    while (lead < path.size() && path[lead] == static_cast<int32_t>(lead)) ++lead;
    prefix.push_back(s.committed + static_cast<int32_t>(lead));
    for (size_t j = lead; j < path.size(); ++j) extra.push_back(s.committed + path[j]);
    begin.push_back(static_cast<int32_t>(extra.size()));
  }
}

// The ABI 0.8 options a paged test runs with: a window (0: none) and sinks (empty: none).
struct Extras {
  uint32_t window;
  std::vector<float> sinks;
};

std::vector<Extras> extras_cases(std::mt19937& rng, uint32_t n_head) {
  return {{0, {}},
          {3, {}},
          {0, random_floats(rng, n_head, 2.0f)},
          {1, random_floats(rng, n_head, 2.0f)},
          {7, random_floats(rng, n_head, 2.0f)},
          {12, std::vector<float>(n_head, 30.0f)}};
}

// `p` with extras `x`, its sinks uploaded into `buffer` (which must outlive the call) and
// viewed through `view`.
specd_attention_params with_extras(specd_attention_params p, const Extras& x, Device& dev,
                                   Buffer& buffer, View& view) {
  p.window = x.window;
  if (!x.sinks.empty()) {
    buffer = upload_vec(dev, x.sinks);
    view = buffer.view(SPECD_DTYPE_F32, 1, static_cast<int64_t>(x.sinks.size()));
    p.sinks = view.raw();
  }
  return p;
}

}  // namespace

TEST_CASE("attention_paged over several sequences equals attention over each one's rows laid out") {
  std::mt19937 rng(11);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const uint32_t n_head = 4, n_kv = 2, hd = 64;
    const int64_t kc = n_kv * hd, qc = n_head * hd, B = 4, pool_blocks = 24;
    // A tree after 9 rows, a 14-row chain after 5 (the lane kernel's case), one decoded row
    // after 17; their blocks interleave in the pool.
    std::vector<Seq> seqs = {{9, {-1, 0, 0, 1, 2, 4}, {5, 1, 9, 12}},
                             {5, std::vector<int32_t>(14), {0, 7, 3, 20, 15}},
                             {17, {-1}, {2, 22, 11, 4, 18}}};
    std::iota(seqs[1].parents.begin(), seqs[1].parents.end(), -1);
    auto k = random_floats(rng, pool_blocks * B * kc), v = random_floats(rng, pool_blocks * B * kc);
    std::vector<int32_t> prefix, begin = {0}, extra, table_begin, table;
    int64_t m = 0;
    for (const Seq& s : seqs) {
      append_mask(s, prefix, begin, extra);
      for (size_t i = 0; i < s.parents.size(); ++i) table_begin.push_back(int32_t(table.size()));
      table.insert(table.end(), s.blocks.begin(), s.blocks.end());
      m += static_cast<int64_t>(s.parents.size());
    }
    auto q = random_floats(rng, m * qc);
    Buffer bq = upload_vec(dev, q), bk = upload_vec(dev, k), bv = upload_vec(dev, v);
    Buffer bp = upload_vec(dev, prefix), bb = upload_vec(dev, begin), be = upload_vec(dev, extra);
    Buffer bt = upload_vec(dev, table), btb = upload_vec(dev, table_begin);
    Buffer bo = dev.alloc(m * qc * 4);
    for (const Extras& x : extras_cases(rng, n_head)) {
      Buffer bs;
      View vs;
      const specd_attention_params p =
          with_extras({sizeof(p), n_head, n_kv, hd, 0.125f, 0, nullptr}, x, dev, bs, vs);
      INFO(ob.backend->name() << ": window " << x.window << ", " << x.sinks.size() << " sinks");
      const View ve = be.view(SPECD_DTYPE_I32, 1, static_cast<int64_t>(extra.size()));
      const int64_t pool_rows = pool_blocks * B;
      dev.attention_paged(bq.view(SPECD_DTYPE_F32, m, qc), bk.view(SPECD_DTYPE_F32, pool_rows, kc),
                          bv.view(SPECD_DTYPE_F32, pool_rows, kc), bp.view(SPECD_DTYPE_I32, 1, m),
                          bb.view(SPECD_DTYPE_I32, 1, m + 1), &ve, B,
                          bt.view(SPECD_DTYPE_I32, 1, int64_t(table.size())),
                          btb.view(SPECD_DTYPE_I32, 1, m), p, bo.view(SPECD_DTYPE_F32, m, qc));
      const auto paged = download_vec<float>(bo, m * qc);
      // And against the reference, each row's logical keys found through its table.
      std::vector<std::vector<int64_t>> keys;
      for (int64_t i = 0; i < m; ++i) {
        keys.push_back(row_keys(prefix, begin, extra, i));
        for (int64_t& s : keys.back()) s = table[table_begin[i] + s / B] * B + s % B;
      }
      std::vector<double> ref, mag;
      attention_reference(q, k, v, keys, {n_head, n_kv, hd, 0.125f, x.window, x.sinks}, ref, mag);
      double worst = 0;
      for (size_t e = 0; e < ref.size(); ++e)
        worst = std::max(worst, std::fabs(paged[e] - ref[e]) / (mag[e] + 1e-30));
      CHECK_MESSAGE(worst <= 1e-5, "relative error " << worst);

      int64_t row0 = 0;
      for (const Seq& s : seqs) {
        // The sequence's logical rows, gathered from its blocks into a cache of its own.
        const int64_t cap = static_cast<int64_t>(s.blocks.size()) * B;
        std::vector<float> kk(cap * kc), vv(cap * kc);
        for (int64_t r = 0; r < cap; ++r) {
          const int64_t at = s.blocks[r / B] * B + r % B;
          std::copy_n(k.begin() + at * kc, kc, kk.begin() + r * kc);
          std::copy_n(v.begin() + at * kc, kc, vv.begin() + r * kc);
        }
        std::vector<int32_t> pre, beg = {0}, ext;
        append_mask(s, pre, beg, ext);
        const int64_t sm = static_cast<int64_t>(s.parents.size());
        std::vector<float> qs(q.begin() + row0 * qc, q.begin() + (row0 + sm) * qc);
        Buffer cq = upload_vec(dev, qs), ck = upload_vec(dev, kk), cv = upload_vec(dev, vv);
        Buffer cp = upload_vec(dev, pre), cb = upload_vec(dev, beg);
        Buffer ce = upload_vec(dev, ext.empty() ? std::vector<int32_t>{0} : ext);
        Buffer co = dev.alloc(sm * qc * 4);
        const View vext = ce.view(SPECD_DTYPE_I32, 1, std::max<int64_t>(1, int64_t(ext.size())));
        dev.attention(cq.view(SPECD_DTYPE_F32, sm, qc), ck.view(SPECD_DTYPE_F32, cap, kc),
                      cv.view(SPECD_DTYPE_F32, cap, kc), cp.view(SPECD_DTYPE_I32, 1, sm),
                      cb.view(SPECD_DTYPE_I32, 1, sm + 1), ext.empty() ? nullptr : &vext, p,
                      co.view(SPECD_DTYPE_F32, sm, qc));
        const auto laid_out = download_vec<float>(co, sm * qc);
        INFO(ob.backend->name() << ": sequence at row " << row0);
        CHECK(std::memcmp(laid_out.data(), paged.data() + row0 * qc, sm * qc * 4) == 0);
        row0 += sm;
      }
    }
  }
}

TEST_CASE("set_rows scatters rows verbatim and refuses what it cannot write") {
  std::mt19937 rng(12);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t cols = 64, rows = 10;
    auto src = random_floats(rng, 3 * cols);
    std::vector<float> dst(rows * cols, -1.0f);
    Buffer bs = upload_vec(dev, src), bd = upload_vec(dev, dst);
    const std::vector<int32_t> idx = {7, 2, 9};
    Buffer bi = upload_vec(dev, idx);
    dev.set_rows(bs.view(SPECD_DTYPE_F32, 3, cols), bi.view(SPECD_DTYPE_I32, 1, 3),
                 bd.view(SPECD_DTYPE_F32, rows, cols));
    const auto got = download_vec<float>(bd, rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      const auto at = std::find(idx.begin(), idx.end(), r);
      for (int64_t c = 0; c < cols; ++c)
        CHECK(got[r * cols + c] == (at == idx.end() ? -1.0f : src[(at - idx.begin()) * cols + c]));
    }
    // q8_0 rows (34 bytes a block) go verbatim too, whatever their stride.
    std::vector<uint8_t> qsrc(2 * 68);
    for (size_t i = 0; i < qsrc.size(); ++i) qsrc[i] = static_cast<uint8_t>(i * 7 + 1);
    Buffer bqs = upload_vec(dev, qsrc), bqd = dev.alloc(4 * 80);
    const std::vector<int32_t> qidx = {3, 0};
    Buffer bqi = upload_vec(dev, qidx);
    dev.set_rows(bqs.view(SPECD_DTYPE_Q8_0, 2, 64), bqi.view(SPECD_DTYPE_I32, 1, 2),
                 bqd.view(SPECD_DTYPE_Q8_0, 4, 64, 0, 80));
    const auto qgot = download_vec<uint8_t>(bqd, 4 * 80);
    CHECK(std::memcmp(qgot.data() + 3 * 80, qsrc.data(), 68) == 0);
    CHECK(std::memcmp(qgot.data(), qsrc.data() + 68, 68) == 0);
    // Another dtype than the destination's is refused: by shape when no conversion exists.
    CHECK_THROWS_WITH_AS(
        dev.set_rows(bs.view(SPECD_DTYPE_F32, 2, 64), bqi.view(SPECD_DTYPE_I32, 1, 2),
                     bqd.view(SPECD_DTYPE_BF16, 2, 64)),
        doctest::Contains("set_rows"), Error);
  }
}

TEST_CASE("cpu attention_paged and set_rows refuse tables and indices outside their buffers") {
  OpenBackend cpu = open_cpu(2);
  Device& dev = *cpu.device;
  const int64_t kc = 64, qc = 64, B = 4;
  std::mt19937 rng(13);
  auto k = random_floats(rng, 8 * B * kc);
  Buffer bk = upload_vec(dev, k), bv = upload_vec(dev, k);
  Buffer bq = upload_vec(dev, random_floats(rng, qc)), bo = dev.alloc(qc * 4);
  specd_attention_params p{sizeof(p), 1, 1, 64, 0.125f, 0, nullptr};
  auto call = [&](std::vector<int32_t> table, int32_t prefix, int32_t table_begin) {
    Buffer bp = upload_vec(dev, std::vector<int32_t>{prefix});
    Buffer bb = upload_vec(dev, std::vector<int32_t>{0, 0});
    Buffer bt = upload_vec(dev, table);
    Buffer btb = upload_vec(dev, std::vector<int32_t>{table_begin});
    dev.attention_paged(bq.view(SPECD_DTYPE_F32, 1, qc), bk.view(SPECD_DTYPE_F32, 8 * B, kc),
                        bv.view(SPECD_DTYPE_F32, 8 * B, kc), bp.view(SPECD_DTYPE_I32, 1, 1),
                        bb.view(SPECD_DTYPE_I32, 1, 2), nullptr, B,
                        bt.view(SPECD_DTYPE_I32, 1, int64_t(table.size())),
                        btb.view(SPECD_DTYPE_I32, 1, 1), p, bo.view(SPECD_DTYPE_F32, 1, qc));
  };
  CHECK_NOTHROW(call({3, 1}, 8, 0));
  CHECK_THROWS_WITH_AS(call({3, 8}, 8, 0), doctest::Contains("outside the pool"), UsageError);
  CHECK_THROWS_WITH_AS(call({3, 1}, 9, 0), doctest::Contains("prefix_len out of range"),
                       UsageError);
  CHECK_THROWS_WITH_AS(call({3, 1}, 4, 3), doctest::Contains("table_begin"), UsageError);
  // Pools that are not whole blocks.
  CHECK_THROWS_WITH_AS(
      dev.attention_paged(bq.view(SPECD_DTYPE_F32, 1, qc), bk.view(SPECD_DTYPE_F32, 30, kc),
                          bv.view(SPECD_DTYPE_F32, 30, kc), bq.view(SPECD_DTYPE_I32, 1, 1),
                          bq.view(SPECD_DTYPE_I32, 1, 2), nullptr, B,
                          bq.view(SPECD_DTYPE_I32, 1, 1), bq.view(SPECD_DTYPE_I32, 1, 1), p,
                          bo.view(SPECD_DTYPE_F32, 1, qc)),
      doctest::Contains("whole blocks"), UsageError);
  Buffer bs = upload_vec(dev, random_floats(rng, 2 * kc));
  auto scatter = [&](std::vector<int32_t> idx) {
    Buffer bi = upload_vec(dev, idx);
    dev.set_rows(bs.view(SPECD_DTYPE_F32, 2, kc), bi.view(SPECD_DTYPE_I32, 1, 2),
                 bk.view(SPECD_DTYPE_F32, 8 * B, kc));
  };
  CHECK_NOTHROW(scatter({0, 31}));
  CHECK_THROWS_WITH_AS(scatter({0, 32}), doctest::Contains("outside [0, 32)"), UsageError);
  CHECK_THROWS_WITH_AS(scatter({5, 5}), doctest::Contains("appears twice"), UsageError);
}

TEST_CASE("set_rows encodes f32 rows as f16 and q8_0 with the SDK's encoders' bits") {
  std::mt19937 rng(14);
  for (auto& ob : open_backends()) {
    Device& dev = *ob.device;
    const int64_t cols = 128;
    auto src = random_floats(rng, 3 * cols, 3.0f);
    src[5] = 65520.0f;  // rounds to inf in f16
    src[6] = 6.0e-8f;   // a subnormal half
    src[7] = -0.0f;
    for (int64_t c = 64; c < 96; ++c) src[cols + c] = 0.0f;  // an all-zero q8_0 block
    Buffer bs = upload_vec(dev, src);
    const std::vector<int32_t> idx = {2, 0, 3};
    Buffer bi = upload_vec(dev, idx);
    {
      Buffer bd = dev.alloc(4 * cols * 2);
      dev.set_rows(bs.view(SPECD_DTYPE_F32, 3, cols), bi.view(SPECD_DTYPE_I32, 1, 3),
                   bd.view(SPECD_DTYPE_F16, 4, cols));
      const auto got = download_vec<uint16_t>(bd, 4 * cols);
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t c = 0; c < cols; ++c) {
          INFO(ob.backend->name() << " f16 row " << i << " col " << c);
          CHECK(got[idx[i] * cols + c] == specd::ggml::f32_to_f16(src[i * cols + c]));
        }
    }
    {
      const int64_t row_bytes = cols / 32 * 34;
      Buffer bd = dev.alloc(4 * row_bytes);
      dev.set_rows(bs.view(SPECD_DTYPE_F32, 3, cols), bi.view(SPECD_DTYPE_I32, 1, 3),
                   bd.view(SPECD_DTYPE_Q8_0, 4, cols));
      const auto got = download_vec<uint8_t>(bd, 4 * row_bytes);
      for (int64_t i = 0; i < 3; ++i) {
        std::vector<uint8_t> want(row_bytes);
        for (int64_t b = 0; b < cols / 32; ++b)
          specd::ggml::quantize_q8_0_block(src.data() + i * cols + 32 * b, want.data() + 34 * b);
        INFO(ob.backend->name() << " q8_0 row " << i);
        CHECK(std::memcmp(got.data() + idx[i] * row_bytes, want.data(), row_bytes) == 0);
      }
    }
  }
}

TEST_CASE("attention_paged over f16 and q8_0 pools equals f32 attention over the decoded rows") {
  std::mt19937 rng(15);
  // Every backend, and the CPU backend with each kernel this CPU has (the AVX2 one reads the
  // encoded rows itself, and so does the AVX-512 one outside its lanes: the tree rows; the
  // generic one and the AVX-512 lanes, the chain, decode them first).
  std::vector<OpenBackend> devices = open_backends();
  std::vector<std::string> labels;
  for (const OpenBackend& ob : devices) labels.push_back(ob.backend->name());
  for (const char* kernel : {"generic", "avx2", "avx512"})
    if (OpenBackend cpu = open_cpu_kernel(kernel, 2); cpu.device) {
      devices.push_back(std::move(cpu));
      labels.push_back(std::string("cpu kernel ") + kernel);
    }
  for (size_t d = 0; d < devices.size(); ++d) {
    Device& dev = *devices[d].device;
    for (const specd_dtype dtype : {SPECD_DTYPE_F16, SPECD_DTYPE_Q8_0}) {
      for (const uint32_t hd : {64u, 128u}) {
        const uint32_t n_head = 4, n_kv = 2;
        const int64_t kc = n_kv * hd, qc = n_head * hd, B = 4, blocks = 10, rows = blocks * B;
        // The pool's rows: f32 values encoded by set_rows, and the same rows decoded to f32.
        auto values = random_floats(rng, rows * kc);
        std::vector<int32_t> all(rows);
        std::iota(all.begin(), all.end(), 0);
        Buffer bsrc = upload_vec(dev, values), ball = upload_vec(dev, all);
        const int64_t row_bytes = static_cast<int64_t>(sdk::dtype_row_bytes(dtype, kc));
        Buffer bk = dev.alloc(rows * row_bytes), bv = dev.alloc(rows * row_bytes);
        const View kpool = bk.view(dtype, rows, kc), vpool = bv.view(dtype, rows, kc);
        dev.set_rows(bsrc.view(SPECD_DTYPE_F32, rows, kc), ball.view(SPECD_DTYPE_I32, 1, rows),
                     kpool);
        dev.set_rows(bsrc.view(SPECD_DTYPE_F32, rows, kc), ball.view(SPECD_DTYPE_I32, 1, rows),
                     vpool);
        std::vector<float> decoded(rows * kc);
        const auto kbytes = download_vec<uint8_t>(bk, rows * row_bytes);
        for (int64_t r = 0; r < rows; ++r)
          specd::ggml::dequantize_row(dtype, kbytes.data() + r * row_bytes, kc,
                                      decoded.data() + r * kc);
        // One sequence (a tree after 9 rows) and one chain (16 rows, the lane kernel's case).
        std::vector<Seq> seqs = {{9, {-1, 0, 0, 1, 2}, {3, 1, 7, 5}},
                                 {2, std::vector<int32_t>(16), {8, 0, 2, 9, 6}}};
        std::iota(seqs[1].parents.begin(), seqs[1].parents.end(), -1);
        std::vector<int32_t> prefix, begin = {0}, extra, table_begin, table;
        for (const Seq& s : seqs) {
          append_mask(s, prefix, begin, extra);
          for (size_t i = 0; i < s.parents.size(); ++i)
            table_begin.push_back(int32_t(table.size()));
          table.insert(table.end(), s.blocks.begin(), s.blocks.end());
        }
        const int64_t m = static_cast<int64_t>(prefix.size());
        auto q = random_floats(rng, m * qc);
        for (const Extras& x :
             std::vector<Extras>{{0, {}}, {5, random_floats(rng, n_head, 2.0f)}}) {
          Buffer bs;
          View vs;
          const specd_attention_params p =
              with_extras({sizeof(p), n_head, n_kv, hd, 1.0f / std::sqrt(float(hd)), 0, nullptr}, x,
                          dev, bs, vs);
          Buffer bq = upload_vec(dev, q), bp = upload_vec(dev, prefix), bb = upload_vec(dev, begin);
          Buffer be = upload_vec(dev, extra), bt = upload_vec(dev, table);
          Buffer btb = upload_vec(dev, table_begin), bo = dev.alloc(m * qc * 4);
          const View ve = be.view(SPECD_DTYPE_I32, 1, static_cast<int64_t>(extra.size()));
          dev.attention_paged(bq.view(SPECD_DTYPE_F32, m, qc), kpool, vpool,
                              bp.view(SPECD_DTYPE_I32, 1, m), bb.view(SPECD_DTYPE_I32, 1, m + 1),
                              &ve, B, bt.view(SPECD_DTYPE_I32, 1, int64_t(table.size())),
                              btb.view(SPECD_DTYPE_I32, 1, m), p, bo.view(SPECD_DTYPE_F32, m, qc));
          const auto got = download_vec<float>(bo, m * qc);
          // The same call over an f32 pool holding the decoded values.
          Buffer fk = upload_vec(dev, decoded);
          const View fpool = fk.view(SPECD_DTYPE_F32, rows, kc);
          Buffer bo2 = dev.alloc(m * qc * 4);
          dev.attention_paged(bq.view(SPECD_DTYPE_F32, m, qc), fpool, fpool,
                              bp.view(SPECD_DTYPE_I32, 1, m), bb.view(SPECD_DTYPE_I32, 1, m + 1),
                              &ve, B, bt.view(SPECD_DTYPE_I32, 1, int64_t(table.size())),
                              btb.view(SPECD_DTYPE_I32, 1, m), p, bo2.view(SPECD_DTYPE_F32, m, qc));
          const auto want = download_vec<float>(bo2, m * qc);
          INFO(labels[d] << " " << sdk::dtype_name(dtype) << " head_dim " << hd << " window "
                         << x.window << ", " << x.sinks.size() << " sinks");
          CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
        }
      }
    }
  }
}
