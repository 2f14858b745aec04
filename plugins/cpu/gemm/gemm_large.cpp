// Large-m GEMM (prefill) through oneDNN. f32 weights are used in place; f16/bf16 and
// quantized weights are decoded to f32 in panels of kPanel rows, each panel one oneDNN matmul.
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>
#ifdef SPECD_CPU_OPENMP
#include <omp.h>
#endif

#include "gemm/decode.hpp"
#include "gemm/gemm.hpp"

namespace specd::cpu {
namespace {

constexpr int64_t kPanel = 512;  // weight rows decoded per oneDNN call

using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

}  // namespace

struct LargeGemm::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, dnnl::matmul> cache;
  std::vector<float> panel;

  dnnl::matmul& primitive(int64_t m, int64_t n, int64_t k, int64_t ldx, int64_t ldw, int64_t ldy) {
    const Key key{m, n, k, ldx, ldw, ldy};
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    if (cache.size() > 64) cache.clear();
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc a({m, k}, dt::f32, {ldx, 1});
    const dnnl::memory::desc b({k, n}, dt::f32, {1, ldw});  // w[n, k] read as wᵀ
    const dnnl::memory::desc c({m, n}, dt::f32, {ldy, 1});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
    return cache.emplace(key, dnnl::matmul(pd)).first->second;
  }

  void matmul(const float* x, const float* w, float* y, int64_t m, int64_t n, int64_t k,
              int64_t ldx, int64_t ldw, int64_t ldy) {
    dnnl::matmul& prim = primitive(m, n, k, ldx, ldw, ldy);
    using dt = dnnl::memory::data_type;
    dnnl::memory a({{m, k}, dt::f32, {ldx, 1}}, engine, const_cast<float*>(x));
    dnnl::memory b({{k, n}, dt::f32, {1, ldw}}, engine, const_cast<float*>(w));
    dnnl::memory c({{m, n}, dt::f32, {ldy, 1}}, engine, y);
    prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  }
};

LargeGemm::LargeGemm() : impl_(new Impl) {}
LargeGemm::~LargeGemm() {
  delete impl_;
}

void LargeGemm::run(ThreadPool& pool, const GemmArgs& a) {
#ifdef SPECD_CPU_OPENMP
  // oneDNN's OpenMP team follows this thread's setting: use the device's thread count, not
  // every core (the ICV is per calling thread, so other devices keep theirs).
  omp_set_num_threads(pool.size());
#endif
  if (a.dtype == SPECD_DTYPE_F32 && a.ldw % 4 == 0) {
    impl_->matmul(a.x, reinterpret_cast<const float*>(a.w), a.y, a.m, a.n, a.k, a.ldx, a.ldw / 4,
                  a.ldy);
    return;
  }
  impl_->panel.resize(static_cast<size_t>(kPanel * a.k));
  float* panel = impl_->panel.data();
  for (int64_t j0 = 0; j0 < a.n; j0 += kPanel) {
    const int64_t nc = a.n - j0 < kPanel ? a.n - j0 : kPanel;
    if (a.dtype == SPECD_DTYPE_F32) {
      for (int64_t j = 0; j < nc; ++j)
        std::memcpy(panel + j * a.k, a.w + (j0 + j) * a.ldw, static_cast<size_t>(a.k) * 4);
    } else {
      pool.run(nc, [&](int64_t j) {
        decode_row(a.w + (j0 + j) * a.ldw, a.dtype, a.k, panel + j * a.k);
      });
    }
    impl_->matmul(a.x, panel, a.y + j0, a.m, nc, a.k, a.ldx, a.k, a.ldy);
  }
}

}  // namespace specd::cpu
