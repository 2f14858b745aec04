// The CPU backend's integer kernel family (plugins/cpu/qint/qint.hpp, SPECD_CPU_QUANT=int8): on
// every kernel this CPU runs, each product equals a scalar reference of the same integer
// algorithm written here from qint.hpp's definition, bit for bit; rows are batch invariant for
// m = 1..64; and the error against the exact product is within the activation rounding bound.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend_test_util.hpp"

using namespace specd;
using namespace specd::test;

namespace {

// ---- the reference: qint.hpp's definition, element by element ------------------------------

struct RefAct {
  std::vector<int8_t> q;  // [m, k]
  std::vector<float> d;   // [m, k / B]
  std::vector<int> bsum;  // [m, k / 16] (k-quants)
};

int8_t clamp127(float v) {
  const int i = static_cast<int>(std::nearbyint(v));
  return static_cast<int8_t>(std::clamp(i, -127, 127));
}

RefAct quantize(const std::vector<float>& x, int64_t m, int64_t k, bool k_blocks) {
  const int64_t B = k_blocks ? 256 : 32;
  RefAct a;
  a.q.resize(m * k);
  a.d.resize(m * k / B);
  a.bsum.resize(m * k / 16);
  for (int64_t blk = 0; blk < m * k / B; ++blk) {
    const float* xb = x.data() + blk * B;
    int8_t* qb = a.q.data() + blk * B;
    float amax = 0, max = 0;
    for (int64_t i = 0; i < B; ++i)
      if (std::fabs(xb[i]) > amax) {
        amax = std::fabs(xb[i]);
        max = xb[i];
      }
    if (k_blocks) {
      const float iscale = amax == 0 ? 0.0f : -127.0f / max;
      for (int64_t i = 0; i < B; ++i) qb[i] = amax == 0 ? 0 : clamp127(iscale * xb[i]);
      a.d[blk] = amax == 0 ? 0.0f : 1.0f / iscale;
    } else {
      const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
      for (int64_t i = 0; i < B; ++i) qb[i] = clamp127(xb[i] * id);
      a.d[blk] = d;
    }
  }
  for (int64_t g = 0; g < m * k / 16; ++g)
    for (int i = 0; i < 16; ++i) a.bsum[g] += a.q[16 * g + i];
  return a;
}

float reduce(std::vector<float> a) {
  for (size_t w = a.size() / 2; w >= 1; w /= 2)
    for (size_t l = 0; l < w; ++l) a[l] += a[l + w];
  return a[0];
}

// The integer w of element i of a 32-element block: x = d * w, or d * w + m for q4_1, q5_1.
int weight_int(specd_dtype dt, const uint8_t* b, unsigned i) {
  switch (dt) {
    case SPECD_DTYPE_Q4_1:
      return static_cast<int>(ggml::nibble32(b + 4, i));
    case SPECD_DTYPE_Q5_1:
      return static_cast<int>(ggml::nibble32(b + 8, i) |
                              (((ggml::load_u32(b + 4) >> i) & 1u) << 4));
    case SPECD_DTYPE_Q4_0:
      return static_cast<int>(ggml::nibble32(b + 2, i)) - 8;
    case SPECD_DTYPE_Q5_0:
      return static_cast<int>(ggml::nibble32(b + 6, i) |
                              (((ggml::load_u32(b + 2) >> i) & 1u) << 4)) -
             16;
    case SPECD_DTYPE_IQ4_NL:
      return ggml::iq4_level(ggml::nibble32(b + 2, i));
    case SPECD_DTYPE_MXFP4: {  // OCP MX's E2M1 values, doubled
      constexpr int kDoubledE2M1[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
      return kDoubledE2M1[ggml::nibble32(b + 1, i)];
    }
    default:
      return static_cast<int8_t>(b[2 + i]);
  }
}

// Super-block b (256 elements of `bytes` bytes) of weight row `w` against row i of `a`: the
// block's bytes, the activation quants, their sums over 16 and the activation scale.
struct SuperBlock {
  const uint8_t* blk;
  const int8_t* y;
  const int* bsum16;
  float dy;
};

SuperBlock super_block(const uint8_t* w, uint32_t bytes, const RefAct& a, int64_t i, int64_t k,
                       int64_t b) {
  return {w + bytes * b, a.q.data() + i * k + 256 * b, a.bsum.data() + i * (k / 16) + 16 * b,
          a.d[i * (k / 256) + b]};
}

// q2_K, q3_K, iq4_xs: 16 lanes of scale * integer * y sums per block; q2_K's mins over bsum16.
float reference_lowbit(specd_dtype dt, const uint8_t* w, const RefAct& a, int64_t i, int64_t k) {
  std::vector<float> acc(16, 0.0f), macc(8, 0.0f);
  const uint32_t bytes = ggml::block_layout(dt).bytes;
  for (int64_t b = 0; b < k / 256; ++b) {
    const auto [blk, y, bs, dy] = super_block(w, bytes, a, i, k, b);
    int isum[16] = {};
    for (unsigned e = 0; e < 256; ++e) {
      int coef;
      if (dt == SPECD_DTYPE_Q2_K) {
        coef = (blk[e / 16] & 15) *
               static_cast<int>((blk[16 + e / 128 * 32 + e % 32] >> (2 * (e / 32 % 4))) & 3);
      } else if (dt == SPECD_DTYPE_Q3_K) {
        const int lo = (blk[32 + e / 128 * 32 + e % 32] >> (2 * (e / 32 % 4))) & 3;
        const int hbit = (blk[e % 32] >> (e / 32)) & 1;
        coef = ggml::q3_k_scale(blk + 96, e / 16) * (hbit ? lo : lo - 4);
      } else {
        const unsigned j = e / 32;
        const int sc = static_cast<int>(((blk[4 + j / 2] >> (4 * (j % 2))) & 15) |
                                        (((ggml::load_u16(blk + 2) >> (2 * j)) & 3) << 4)) -
                       32;
        const unsigned q = (blk[8 + 16 * j + e % 16] >> (4 * (e % 32 / 16))) & 15;
        coef = sc * ggml::iq4_level(q);
      }
      isum[(e % 64) / 4] += coef * y[e];
    }
    const float dd = ggml::load_f16(blk + (dt == SPECD_DTYPE_Q2_K   ? 80
                                           : dt == SPECD_DTYPE_Q3_K ? 108
                                                                    : 0)) *
                     dy;
    for (int l = 0; l < 16; ++l) acc[l] = std::fma(dd, static_cast<float>(isum[l]), acc[l]);
    if (dt == SPECD_DTYPE_Q2_K) {
      const float dm = ggml::load_f16(blk + 82) * dy;
      for (unsigned l = 0; l < 8; ++l) {
        const int ms = (blk[2 * l] >> 4) * bs[2 * l] + (blk[2 * l + 1] >> 4) * bs[2 * l + 1];
        macc[l] = std::fma(dm, static_cast<float>(ms), macc[l]);
      }
    }
  }
  return dt == SPECD_DTYPE_Q2_K ? reduce(acc) - reduce(macc) : reduce(acc);
}

// q4_K: one exact integer isum and msum per block, one f32 accumulator (no lanes).
float reference_q4_k(const uint8_t* w, const RefAct& a, int64_t i, int64_t k) {
  float acc = 0.0f;
  for (int64_t b = 0; b < k / 256; ++b) {
    const auto [blk, y, bs, dy] = super_block(w, 144, a, i, k, b);
    int isum = 0, msum = 0;
    for (unsigned e = 0; e < 256; ++e) {
      unsigned sc, mn;
      ggml::k_scale_min(blk + 4, e / 32, &sc, &mn);
      isum += static_cast<int>(sc * ggml::q4_k_quant(blk + 16, e)) * y[e];
    }
    for (unsigned g = 0; g < 8; ++g) {
      unsigned sc, mn;
      ggml::k_scale_min(blk + 4, g, &sc, &mn);
      msum += static_cast<int>(mn) * (bs[2 * g] + bs[2 * g + 1]);
    }
    const float dd = ggml::load_f16(blk) * dy, dm = ggml::load_f16(blk + 2) * dy;
    acc = std::fma(dd, static_cast<float>(isum), acc);
    acc = std::fma(-dm, static_cast<float>(msum), acc);
  }
  return acc;
}

// q6_K: one exact integer isum per block over the signed quants, one f32 accumulator.
float reference_q6_k(const uint8_t* w, const RefAct& a, int64_t i, int64_t k) {
  float acc = 0.0f;
  for (int64_t b = 0; b < k / 256; ++b) {
    const uint8_t* blk = w + 210 * b;
    const int8_t* y = a.q.data() + i * k + 256 * b;
    int isum = 0;
    for (unsigned e = 0; e < 256; ++e)
      isum += static_cast<int8_t>(blk[192 + e / 16]) * ggml::q6_k_quant(blk, e) * y[e];
    const float dd = ggml::load_f16(blk + 208) * a.d[i * (k / 256) + b];
    acc = std::fma(dd, static_cast<float>(isum), acc);
  }
  return acc;
}

// q8_0: one exact integer isum per block over the int8 quants, one f32 accumulator.
float reference_q8_0(const uint8_t* w, const RefAct& a, int64_t i, int64_t k) {
  float acc = 0.0f;
  for (int64_t b = 0; b < k / 32; ++b) {
    const uint8_t* blk = w + 34 * b;
    int isum = 0;
    for (unsigned e = 0; e < 32; ++e)
      isum += weight_int(SPECD_DTYPE_Q8_0, blk, e) * a.q[i * k + 32 * b + e];
    const float dd = ggml::load_f16(blk) * a.d[i * (k / 32) + b];
    acc = std::fma(dd, static_cast<float>(isum), acc);
  }
  return acc;
}

// Output (i, j) of the integer family for weight row `w`.
float reference(specd_dtype dt, const uint8_t* w, const RefAct& a, int64_t i, int64_t k) {
  std::vector<float> acc(16, 0.0f);
  const uint32_t bytes = ggml::block_layout(dt).bytes;
  if (dt == SPECD_DTYPE_Q8_0) return reference_q8_0(w, a, i, k);
  if (ggml::block_layout(dt).elements == 32) {
    const bool with_min = dt == SPECD_DTYPE_Q4_1 || dt == SPECD_DTYPE_Q5_1;
    std::vector<float> macc16(16, 0.0f);
    for (int64_t b = 0; b < k / 32; ++b) {
      const uint8_t* blk = w + bytes * b;
      const float dy = a.d[i * (k / 32) + b];
      // mxfp4: 2^(e - 127) halved for its doubled levels
      const float dw = dt == SPECD_DTYPE_MXFP4 ? std::ldexp(1.0f, static_cast<int>(blk[0]) - 128)
                                               : ggml::load_f16(blk);
      const float dd = dw * dy;
      for (unsigned l = 0; l < 8; ++l) {
        int s = 0, s4 = 0;
        for (unsigned t = 0; t < 4; ++t) {
          const int8_t y = a.q[i * k + 32 * b + 4 * l + t];
          s += weight_int(dt, blk, 4 * l + t) * y;
          s4 += y;
        }
        float& r = acc[8 * (b & 1) + l];
        r = std::fma(dd, static_cast<float>(s), r);
        if (with_min) {
          float& mr = macc16[8 * (b & 1) + l];
          mr = std::fma(ggml::load_f16(blk + 2) * dy, static_cast<float>(s4), mr);
        }
      }
    }
    return with_min ? reduce(acc) + reduce(macc16) : reduce(acc);
  }
  if (dt == SPECD_DTYPE_Q2_K || dt == SPECD_DTYPE_Q3_K || dt == SPECD_DTYPE_IQ4_XS)
    return reference_lowbit(dt, w, a, i, k);
  if (dt == SPECD_DTYPE_Q4_K) return reference_q4_k(w, a, i, k);
  if (dt == SPECD_DTYPE_Q6_K) return reference_q6_k(w, a, i, k);
  for (int64_t b = 0; b < k / 256; ++b) {  // q5_K: 16 lanes, scale and min
    const auto [blk, y, bs, dy] = super_block(w, bytes, a, i, k, b);
    int isum[16] = {};
    for (unsigned e = 0; e < 256; ++e) {
      unsigned sc, mn;
      ggml::k_scale_min(blk + 4, e / 32, &sc, &mn);
      const unsigned q =
          ggml::q4_k_quant(blk + 48, e) | (((blk[16 + e % 32] >> (e / 32)) & 1u) << 4);
      // qint.hpp's lane of e: bits 6, 4, 5, 3.
      const unsigned b6 = (e >> 6) & 1, b5 = (e >> 5) & 1, b4 = (e >> 4) & 1, b3 = (e >> 3) & 1;
      isum[8 * b6 + 4 * b4 + 2 * b5 + b3] += static_cast<int>(sc * q) * y[e];
    }
    const float dd = ggml::load_f16(blk) * dy;
    for (int l = 0; l < 16; ++l) acc[l] = std::fma(dd, static_cast<float>(isum[l]), acc[l]);
    for (unsigned g = 0; g < 16; ++g) {  // the min (offset) term of the 16 values 16g ..
      unsigned sc, mn;
      ggml::k_scale_min(blk + 4, g / 2, &sc, &mn);
      const float wm = ggml::load_f16(blk + 2) * static_cast<float>(mn);
      acc[g] = std::fma(-wm, dy * static_cast<float>(bs[g]), acc[g]);
    }
  }
  return reduce(acc);
}

// ---- the checks -----------------------------------------------------------------------------

constexpr specd_dtype kInt8Types[] = {
    SPECD_DTYPE_Q4_K, SPECD_DTYPE_Q5_K,   SPECD_DTYPE_Q6_K, SPECD_DTYPE_Q8_0, SPECD_DTYPE_Q4_0,
    SPECD_DTYPE_Q5_0, SPECD_DTYPE_IQ4_NL, SPECD_DTYPE_Q4_1, SPECD_DTYPE_Q5_1, SPECD_DTYPE_Q2_K,
    SPECD_DTYPE_Q3_K, SPECD_DTYPE_IQ4_XS, SPECD_DTYPE_MXFP4};

// Activations with the cases that matter: an all-zero block, an outlier, ties of magnitude.
std::vector<float> activations(std::mt19937& rng, int64_t m, int64_t k) {
  auto x = random_floats(rng, m * k);
  for (int64_t c = 0; c < std::min<int64_t>(k, 256); ++c) x[2 * k + c] = 0.0f;
  x[3 * k + 5] = 40.0f;
  x[4 * k + 1] = 9.0f;  // two values of the largest magnitude: the first one gives the sign
  x[4 * k + 2] = -9.0f;
  x[5 * k + 7] = -9.0f;
  x[5 * k + 9] = 9.0f;
  return x;
}

void check_kernel(Device& dev, const std::string& kernel, std::mt19937& rng) {
  // Past the batch-invariant limit (64) too: the family computes any m in 64-row chunks.
  const int64_t max_m = 140;
  for (specd_dtype dt : kInt8Types) {
    const bool kb = ggml::block_layout(dt).elements == 256;
    const std::vector<int64_t> lengths =
        kb ? std::vector<int64_t>{256, 768} : std::vector<int64_t>{96, 160, 1024};
    // (k, n): n not a multiple of 16; q4_K, q6_K and q8_0 also n = 64 + 5 (whole 16-column
    // groups, a tail).
    std::vector<std::pair<int64_t, int64_t>> shapes;
    for (int64_t k : lengths) {
      shapes.push_back({k, 37});
      if (dt == SPECD_DTYPE_Q4_K || dt == SPECD_DTYPE_Q6_K || dt == SPECD_DTYPE_Q8_0)
        shapes.push_back({k, 69});
    }
    for (const auto& [k, n] : shapes) {
      const std::string what =
          kernel + " " + dtype_name(dt) + " k=" + std::to_string(k) + " n=" + std::to_string(n);
      auto x = activations(rng, max_m, k);
      auto wb = encode(dt, random_floats(rng, n * k), n, k);
      if (dt == SPECD_DTYPE_Q8_0)  // a few -128 quants (valid, never made by the quantizer)
        for (int64_t r = 0; r < n; r += 5) wb[r * (k / 32) * 34 + 2 + r % 32] = 0x80;
      auto wd = decode(dt, wb, n, k);
      const uint64_t rb = dtype_row_bytes(dt, k);
      const RefAct act = quantize(x, max_m, k, kb);
      Buffer bx = upload_vec(dev, x), bw = upload_vec(dev, wb), by = dev.alloc(max_m * n * 4);
      const View w = bw.view(dt, n, k);
      const std::vector<float> single =
          matmul_row_by_row(dev, bx.view(SPECD_DTYPE_F32, max_m, k), w, by);
      int differ = 0;
      double worst = 0;  // error / bound
      for (int64_t i = 0; i < max_m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const float want = reference(dt, wb.data() + j * rb, act, i, k);
          if (std::memcmp(&want, &single[i * n + j], 4) != 0) ++differ;
          // |x - d q| <= |d| / 2 per value (nearest rounding), plus f32 sums of k terms.
          double exact = 0, bound = 0;
          const int64_t B = kb ? 256 : 32;
          for (int64_t c = 0; c < k; ++c) {
            const double wx = double(wd[j * k + c]);
            exact += wx * x[i * k + c];
            bound += std::fabs(wx) *
                     (0.5001 * std::fabs(act.d[(i * k + c) / B]) + 1e-5 * std::fabs(x[i * k + c]));
          }
          worst = std::max(worst, std::fabs(single[i * n + j] - exact) / (bound + 1e-30));
        }
      CHECK_MESSAGE(differ == 0, what << ": " << differ << " values differ from the reference");
      CHECK_MESSAGE(worst <= 1.0, what << ": error " << worst << " of the rounding bound");
      CHECK_MESSAGE(worst > 0.0, what << ": no rounding at all: not the integer family");
      int mismatches = 0;
      std::vector<int64_t> ms;
      for (int64_t m = 1; m <= 64; ++m) ms.push_back(m);
      for (int64_t m : {65, 97, 128, 129, 140}) ms.push_back(m);
      for (int64_t m : ms) {
        const int64_t first = max_m - m;
        dev.matmul(bx.view(SPECD_DTYPE_F32, max_m, k).slice_rows(first, m), w,
                   by.view(SPECD_DTYPE_F32, m, n));
        auto y = download_vec<float>(by, m * n);
        if (std::memcmp(y.data(), single.data() + first * n, m * n * 4) != 0) ++mismatches;
      }
      CHECK_MESSAGE(mismatches == 0, what << ": " << mismatches << " values of m differ");
    }
  }
}

}  // namespace

TEST_CASE("cpu int8 family: every kernel equals the reference bit for bit, batch invariant") {
  std::mt19937 rng(21);
  const ScopedEnv quant("SPECD_CPU_QUANT", "int8");
  for (const char* kernel : {"generic", "avx2", "avx512"}) {
    const OpenBackend cpu = open_cpu_kernel(kernel, 2);
    if (!cpu.device) continue;
    Device* const dev = cpu.device.get();
    const std::string name = dev->info().name;
    MESSAGE("kernel " << std::string(kernel) << ": " << name);
    CHECK(name.find("int8") != std::string::npos);
    check_kernel(*dev, kernel, rng);
  }
}

TEST_CASE("cpu: SPECD_CPU_QUANT selects the family; an unknown value is refused naming it") {
  std::mt19937 rng(22);
  const int64_t m = 3, k = 256, n = 9;
  auto x = random_floats(rng, m * k);
  auto wb = encode(SPECD_DTYPE_Q4_K, random_floats(rng, n * k), n, k);
  std::vector<std::vector<float>> results;
  for (const char* family : {"exact", "int8"}) {
    const ScopedEnv quant("SPECD_CPU_QUANT", family);
    Backend backend(registry().require("cpu", SPECD_KIND_BACKEND));
    auto dev = backend.open();
    CHECK(std::string(dev->info().name).find(family) != std::string::npos);
    Buffer bx = upload_vec(*dev, x), bw = upload_vec(*dev, wb), by = dev->alloc(m * n * 4);
    dev->matmul(bx.view(SPECD_DTYPE_F32, m, k), bw.view(SPECD_DTYPE_Q4_K, n, k),
                by.view(SPECD_DTYPE_F32, m, n));
    results.push_back(download_vec<float>(by, m * n));
  }
  CHECK(results[0] != results[1]);  // two numeric families, both close to the exact product
  const ScopedEnv bad("SPECD_CPU_QUANT", "int4");
  CHECK(cpu_open_error().find("SPECD_CPU_QUANT=int4") != std::string::npos);
}

TEST_CASE("cpu int8 family: results do not depend on the thread count") {
  const ScopedEnv quant("SPECD_CPU_QUANT", "int8");
  std::mt19937 rng(23);
  const int64_t m = 9, k = 512;
  auto x = random_floats(rng, m * k);
  // 20 columns: fewer granules than tasks, so some tasks get no columns.
  for (int64_t n : {300, 20})
    for (specd_dtype dt :
         {SPECD_DTYPE_Q4_K, SPECD_DTYPE_Q8_0, SPECD_DTYPE_Q5_1, SPECD_DTYPE_Q3_K}) {
      auto wb = encode(dt, random_floats(rng, n * k), n, k);
      std::vector<std::vector<float>> results;
      for (uint32_t threads : {1u, 2u, 3u}) {
        Backend backend(registry().require("cpu", SPECD_KIND_BACKEND));
        DeviceOptions opt;
        opt.threads = threads;
        auto dev = backend.open(opt);
        Buffer bx = upload_vec(*dev, x), bw = upload_vec(*dev, wb), by = dev->alloc(m * n * 4);
        dev->matmul(bx.view(SPECD_DTYPE_F32, m, k), bw.view(dt, n, k),
                    by.view(SPECD_DTYPE_F32, m, n));
        results.push_back(download_vec<float>(by, m * n));
      }
      CHECK_MESSAGE(results[0] == results[1], dtype_name(dt));
      CHECK_MESSAGE(results[0] == results[2], dtype_name(dt));
    }
}

namespace {

// One hand-made block of q2_K, q3_K or iq4_xs and the product with x = (-127, 1, 1, ..., 1)
// worked out by hand. Such x quantizes without rounding (d_y = 1, q = x) and every f32 step
// is exact, so the integer family must give exactly the exact product.
struct HandCase {
  specd_dtype dtype;
  std::vector<uint8_t> block;
  float want;
};

std::vector<HandCase> hand_cases() {
  std::vector<HandCase> out;
  {  // q2_K: d = 1, dmin = 0.5, every scale 2 and min 1, every quant 3: each weight
     // 1 * 2 * 3 - 0.5 * 1 = 5.5; 5.5 * (-127 + 255) = 704.
    std::vector<uint8_t> b(84, 0);
    for (int j = 0; j < 16; ++j) b[j] = 2 | (1 << 4);
    for (int i = 16; i < 80; ++i) b[i] = 0xff;
    b[81] = 0x3c;  // 1.0
    b[83] = 0x38;  // 0.5
    out.push_back({SPECD_DTYPE_Q2_K, b, 704.0f});
  }
  {  // q3_K: d = 0.25, every scale 37 - 32 = 5, every 2-bit quant 3; hmask bits 0..3 set
     // (elements 0..127: q = 3, weight 3.75) and bits 4..7 clear (128..255: q = -1, weight
     // -1.25): 3.75 * (-127 + 127) - 1.25 * 128 = -160.
    std::vector<uint8_t> b(110, 0);
    for (int i = 0; i < 32; ++i) b[i] = 0x0f;
    for (int i = 32; i < 96; ++i) b[i] = 0xff;
    for (int i = 96; i < 104; ++i) b[i] = 0x55;   // low nibbles 5
    for (int i = 104; i < 108; ++i) b[i] = 0xaa;  // high bits 2
    b[109] = 0x34;                                // 0.25
    out.push_back({SPECD_DTYPE_Q3_K, b, -160.0f});
  }
  {  // iq4_xs: d = 0.5, every scale 33 - 32 = 1, every byte 0x98 (level 1 in the low
     // nibble: elements 32j + 0..15; level 13 in the high: 32j + 16..31). Sub-block 0:
     // 0.5 * (-127 + 15 + 13 * 16) = 48; sub-blocks 1..7: 0.5 * (16 + 13 * 16) each = 784.
    std::vector<uint8_t> b(136, 0);
    b[1] = 0x38;  // 0.5
    b[2] = 0xaa;  // high bits 2
    b[3] = 0xaa;
    for (int i = 4; i < 8; ++i) b[i] = 0x11;  // low nibbles 1
    for (int i = 8; i < 136; ++i) b[i] = 0x98;
    out.push_back({SPECD_DTYPE_IQ4_XS, b, 832.0f});
  }
  return out;
}

}  // namespace

TEST_CASE("cpu int8 family: hand-checked q2_K, q3_K and iq4_xs blocks on every kernel") {
  const ScopedEnv quant("SPECD_CPU_QUANT", "int8");
  // Row 0: x; row 1: -x (d_y = -1); both exact. Two rows also take the multi-row paths.
  std::vector<float> x(2 * 256, 1.0f);
  x[0] = -127.0f;
  for (int c = 0; c < 256; ++c) x[256 + c] = -x[c];
  for (const HandCase& hc : hand_cases()) {
    std::vector<float> decoded(256);
    REQUIRE(ggml::dequantize_row(hc.dtype, hc.block.data(), 256, decoded.data()));
    double exact = 0;
    for (int c = 0; c < 256; ++c) exact += double(decoded[c]) * x[c];
    CHECK_MESSAGE(exact == hc.want, std::string(dtype_name(hc.dtype))
                                        << ": the exact decode gives " << exact);
    for (const char* kernel : {"generic", "avx2", "avx512"}) {
      const OpenBackend cpu = open_cpu_kernel(kernel);
      if (!cpu.device) continue;
      Device* const dev = cpu.device.get();
      Buffer bx = upload_vec(*dev, x), bw = upload_vec(*dev, hc.block), by = dev->alloc(2 * 4);
      for (int64_t m : {1, 2}) {
        dev->matmul(bx.view(SPECD_DTYPE_F32, m, 256), bw.view(hc.dtype, 1, 256),
                    by.view(SPECD_DTYPE_F32, m, 1));
        const auto y = download_vec<float>(by, m);
        CHECK_MESSAGE(y[0] == hc.want, std::string(kernel)
                                           << " " << std::string(dtype_name(hc.dtype)) << " m=" << m
                                           << ": " << y[0] << ", want " << hc.want);
        if (m == 2)
          CHECK_MESSAGE(y[1] == -hc.want, std::string(kernel)
                                              << " " << std::string(dtype_name(hc.dtype))
                                              << " row -x: " << y[1] << ", want " << -hc.want);
      }
    }
  }
}

TEST_CASE("cpu int8 family: q2_K, q3_K and iq4_xs give the same bits on every kernel") {
  const ScopedEnv quant("SPECD_CPU_QUANT", "int8");
  std::mt19937 rng(24);
  const int64_t m = 64, k = 1024, n = 41;
  const auto x = activations(rng, m, k);
  for (specd_dtype dt : {SPECD_DTYPE_Q2_K, SPECD_DTYPE_Q3_K, SPECD_DTYPE_IQ4_XS}) {
    const auto wb = encode(dt, random_floats(rng, n * k), n, k);
    std::vector<std::vector<float>> generic;  // per row count
    for (const char* kernel : {"generic", "avx2", "avx512"}) {
      const OpenBackend cpu = open_cpu_kernel(kernel);
      if (!cpu.device) continue;
      Device* const dev = cpu.device.get();
      Buffer bx = upload_vec(*dev, x), bw = upload_vec(*dev, wb), by = dev->alloc(m * n * 4);
      size_t t = 0;
      for (int64_t rows : {int64_t{1}, int64_t{5}, m}) {
        dev->matmul(bx.view(SPECD_DTYPE_F32, m, k).slice_rows(0, rows), bw.view(dt, n, k),
                    by.view(SPECD_DTYPE_F32, rows, n));
        auto y = download_vec<float>(by, rows * n);
        if (std::string(kernel) == "generic") generic.push_back(y);
        REQUIRE(t < generic.size());
        CHECK_MESSAGE(std::memcmp(y.data(), generic[t].data(), y.size() * 4) == 0,
                      std::string(kernel) << " " << std::string(dtype_name(dt)) << " m=" << rows
                                          << " differs from generic");
        ++t;
      }
    }
  }
}

namespace {

// A q4_K block built by hand, rows x and -x of activations that quantize without rounding,
// and the integers of qint.hpp's q4_K definition worked out by hand for row x.
struct Q4Case {
  std::string what;
  std::vector<uint8_t> block;
  std::vector<float> x;  // 256 values
  int isum, msum;
  float dd, dm;  // d_w * d_y, dmin_w * d_y
  float want;
};

std::vector<Q4Case> q4_k_cases() {
  std::vector<Q4Case> out;
  {  // d = 1, dmin = 0.5, scale s + 1 and min s for sub-block s, every quant 3; x = (-127, 1,
     // .., 1): y = x, d_y = 1, so sub-block 0 sums to -96 and the others to 32.
     // isum = 3 (1 * -96 + 32 * (2 + .. + 8)) = 3072, msum = 32 * (1 + .. + 7) = 896,
     // y = 3072 - 0.5 * 896 = 2624 (also the exact product).
    std::vector<uint8_t> b(144, 0x33);
    b[0] = 0x00, b[1] = 0x3c;  // 1.0
    b[2] = 0x00, b[3] = 0x38;  // 0.5
    for (int i = 0; i < 4; ++i) {
      b[4 + i] = static_cast<uint8_t>(i + 1);                    // scales 0..3
      b[8 + i] = static_cast<uint8_t>(i);                        // mins 0..3
      b[12 + i] = static_cast<uint8_t>((i + 5) | (i + 4) << 4);  // scale, min 4 + i
    }
    std::vector<float> x(256, 1.0f);
    x[0] = -127.0f;
    out.push_back({"scales and mins per sub-block", b, x, 3072, 896, 1.0f, 0.5f, 2624.0f});
  }
  {  // d = dmin = 1, every scale and min 63, every quant 15; x = (126, 127, .., 127): d_y = -1,
     // y = (-126, -127, ..), the sum -32511. isum = 945 * -32511 = -30722895 (odd, past
     // 2^24: float() rounds the tie to even, -30722896), msum = 63 * -32511 = -2048193;
     // 30722896 - 2048193 = 28674703 rounds to 28674704 (the exact product is 28674702).
    std::vector<uint8_t> b(144, 0xff);
    b[0] = 0x00, b[1] = 0x3c;
    b[2] = 0x00, b[3] = 0x3c;
    std::vector<float> x(256, 127.0f);
    x[0] = 126.0f;
    out.push_back(
        {"float() and the f32 steps round", b, x, -30722895, -2048193, -1.0f, -1.0f, 28674704.0f});
  }
  return out;
}

// 17 weight rows of one hand-built block (a group of 16 columns and a tail) times rows x
// (5 rows of 256: x, -x, x, -x, x) on every kernel the CPU runs, the weights both uploaded and
// handed over with buffer_wrap_weights (packed where the AVX-512 kernels run): every output
// must be want (-want for rows -x).
void check_every_kernel(specd_dtype dtype, const std::vector<uint8_t>& block,
                        const std::vector<float>& x, float want, const std::string& what) {
  const int64_t n = 17;
  std::vector<uint8_t> w;
  for (int64_t j = 0; j < n; ++j) w.insert(w.end(), block.begin(), block.end());
  for (const char* kernel : {"generic", "avx2", "avx512"}) {
    const OpenBackend cpu = open_cpu_kernel(kernel);
    if (!cpu.device) continue;
    Device* const dev = cpu.device.get();
    bool copied = false;
    Buffer bx = upload_vec(*dev, x), by = dev->alloc(5 * n * 4);
    Buffer uploaded = upload_vec(*dev, w);
    Buffer handed = dev->wrap_weights(w.data(), w.size(), dtype, n, 256, copied);
    for (const Buffer* bw : {&uploaded, &handed})
      for (int64_t m : {1, 2, 5}) {
        dev->matmul(bx.view(SPECD_DTYPE_F32, m, 256), bw->view(dtype, n, 256),
                    by.view(SPECD_DTYPE_F32, m, n));
        const auto y = download_vec<float>(by, m * n);
        int wrong = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) wrong += y[i * n + j] != (i % 2 ? -want : want);
        CHECK_MESSAGE(wrong == 0, std::string(kernel)
                                      << (bw == &handed && copied ? " packed " : " ") << what
                                      << " m=" << m << ": " << wrong << " values differ from "
                                      << want << " (y[0] = " << y[0] << ")");
      }
  }
}

// The reference and every kernel give `want` for rows x, -x, x, -x, x against `block`
// (row -x has the same y and d_y of the opposite sign, so it gives -want).
void check_block_on_alternating_rows(specd_dtype dtype, const std::vector<uint8_t>& block,
                                     const std::vector<float>& x256, float want,
                                     const std::string& what) {
  std::vector<float> x(5 * 256);
  for (int64_t i = 0; i < 5; ++i)
    for (int e = 0; e < 256; ++e) x[i * 256 + e] = i % 2 ? -x256[e] : x256[e];
  const RefAct act = quantize(x, 2, 256, true);
  CHECK_MESSAGE(reference(dtype, block.data(), act, 0, 256) == want, what);
  CHECK_MESSAGE(reference(dtype, block.data(), act, 1, 256) == -want, what);
  check_every_kernel(dtype, block, x, want, what);
}

}  // namespace

TEST_CASE("cpu int8 family: hand-checked q4_K blocks (one integer per block) on every kernel") {
  const ScopedEnv quant("SPECD_CPU_QUANT", "int8");
  for (const Q4Case& c : q4_k_cases()) {
    const float formula = std::fma(-c.dm, static_cast<float>(c.msum),
                                   std::fma(c.dd, static_cast<float>(c.isum), 0.0f));
    CHECK_MESSAGE(formula == c.want, c.what << ": the formula gives " << formula);
    check_block_on_alternating_rows(SPECD_DTYPE_Q4_K, c.block, c.x, c.want, c.what);
  }
}

namespace {

// A q6_K block built by hand (d_w = 1), rows x and -x of activations that quantize without
// rounding (the same y, d_y of opposite signs), the integer isum of qint.hpp's q6_K worked
// out by hand for row x, and the exact product of the decoded weights with x.
struct Q6Case {
  std::string what;
  std::vector<uint8_t> block;
  std::vector<float> x;  // 256 values
  int isum;
  float dd;  // d_w * d_y
  float want;
  double exact;
};

std::vector<Q6Case> q6_k_cases() {
  std::vector<Q6Case> out;
  {  // Stored quants 0 (q = -32) for elements 0..127 and 63 (q = 31) for 128..255; scales
     // -7, 3 (x7), -2 (x7), -128 for the 16-value groups; x = (-127, 1, .., 1): y = x, d_y = 1,
     // group sums -112, 16, .., 16. isum = -7 * -32 * -112 + 7 * 3 * -32 * 16
     // + 7 * -2 * 31 * 16 + -128 * 31 * 16 = -25088 - 10752 - 6944 - 63488 = -106272.
    std::vector<uint8_t> b(210, 0);
    for (int i = 64; i < 128; ++i) b[i] = 0xff;   // ql of elements 128..255
    for (int i = 160; i < 192; ++i) b[i] = 0xff;  // qh of elements 128..255
    const int sc[16] = {-7, 3, 3, 3, 3, 3, 3, 3, -2, -2, -2, -2, -2, -2, -2, -128};
    for (int g = 0; g < 16; ++g) b[192 + g] = static_cast<uint8_t>(static_cast<int8_t>(sc[g]));
    b[209] = 0x3c;  // d_w = 1.0
    std::vector<float> x(256, 1.0f);
    x[0] = -127.0f;
    out.push_back({"negative scales, q = -32 and 31", b, x, -106272, 1.0f, -106272.0f, -106272.0});
  }
  {  // Every quant q = 31, every scale -127; x = (126, 127, .., 127): d_y = -1, y = (-126,
     // -127, ..), the sum -32511. isum = -3937 * -32511 = 127995807 (odd, past 2^24: float()
     // rounds to a multiple of 8, 127995808); y = -127995808, the exact product -127995807.
    std::vector<uint8_t> b(210, 0xff);
    for (int g = 0; g < 16; ++g) b[192 + g] = 0x81;  // -127
    b[208] = 0x00, b[209] = 0x3c;
    std::vector<float> x(256, 127.0f);
    x[0] = 126.0f;
    out.push_back(
        {"float() rounds the integer", b, x, 127995807, -1.0f, -127995808.0f, -127995807.0});
  }
  return out;
}

}  // namespace

TEST_CASE("cpu int8 family: hand-checked q6_K blocks (one integer per block) on every kernel") {
  const ScopedEnv quant("SPECD_CPU_QUANT", "int8");
  for (const Q6Case& c : q6_k_cases()) {
    const float formula = std::fma(c.dd, static_cast<float>(c.isum), 0.0f);
    CHECK_MESSAGE(formula == c.want, c.what << ": the formula gives " << formula);
    std::vector<float> decoded(256);
    REQUIRE(ggml::dequantize_row(SPECD_DTYPE_Q6_K, c.block.data(), 256, decoded.data()));
    double exact = 0;
    for (int e = 0; e < 256; ++e) exact += double(decoded[e]) * c.x[e];
    CHECK_MESSAGE(exact == c.exact, c.what << ": the exact decode gives " << exact);
    check_block_on_alternating_rows(SPECD_DTYPE_Q6_K, c.block, c.x, c.want, c.what);
  }
}
