#include "gpu_device.hpp"

#include <cstdio>

#include "check.hpp"
#include "launch.hpp"
#include "specd/cpp/backend.hpp"
#include "validate.hpp"

namespace specd::gpu {
namespace {

constexpr std::initializer_list<specd_dtype> kWeightTypes = {
    SPECD_DTYPE_F32,  SPECD_DTYPE_F16,    SPECD_DTYPE_BF16,   SPECD_DTYPE_Q8_0,
    SPECD_DTYPE_Q4_0, SPECD_DTYPE_Q4_1,   SPECD_DTYPE_Q5_0,   SPECD_DTYPE_Q5_1,
    SPECD_DTYPE_Q2_K, SPECD_DTYPE_Q3_K,   SPECD_DTYPE_Q4_K,   SPECD_DTYPE_Q5_K,
    SPECD_DTYPE_Q6_K, SPECD_DTYPE_IQ4_NL, SPECD_DTYPE_IQ4_XS, SPECD_DTYPE_MXFP4};

const float* f32(const Mat& a) {
  return reinterpret_cast<const float*>(a.p);
}
const int32_t* i32(const Mat& a) {
  return reinterpret_cast<const int32_t*>(a.p);
}

}  // namespace

uint32_t GpuDevice::score(sdk::Host, std::string& reason) {
  return vendor_score(reason);
}

GpuDevice::GpuDevice(sdk::Host host, const specd_device_params& params) : host_(host) {
  int count = 0;
  SPECD_GPU_CHECK(cudaGetDeviceCount(&count));
  if (params.device_index >= static_cast<uint32_t>(count))
    throw sdk::invalid_argument(std::string(vendor().name) + ": device_index " +
                                std::to_string(params.device_index) + " but " +
                                std::to_string(count) + " device(s)");
  index_ = static_cast<int>(params.device_index);
  SPECD_GPU_CHECK(cudaSetDevice(index_));
  cudaDeviceProp prop{};
  SPECD_GPU_CHECK(cudaGetDeviceProperties(&prop, index_));
  name_ = std::string(vendor().name) + ":" + std::to_string(index_) + " " + prop.name;
  memory_ = prop.totalGlobalMem;
  units_ = static_cast<uint32_t>(prop.multiProcessorCount);
  SPECD_GPU_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  try {
    void* flag = nullptr;
    SPECD_GPU_CHECK(cudaMalloc(&flag, sizeof(int)));
    error_ = static_cast<int*>(flag);
    SPECD_GPU_CHECK(cudaMemsetAsync(error_, 0, sizeof(int), stream_));
    scratch_ = std::make_unique<Scratch>(stream_);
    large_ = std::make_unique<LargeGemm>(stream_);
  } catch (...) {
    scratch_.reset();
    if (error_) SPECD_GPU_CHECK_NOEXCEPT(cudaFree(error_));
    SPECD_GPU_CHECK_NOEXCEPT(cudaStreamDestroy(stream_));
    throw;
  }
}

GpuDevice::~GpuDevice() {
  large_.reset();
  scratch_.reset();
  std::string err = SPECD_GPU_CHECK_NOEXCEPT(cudaSetDevice(index_));
  if (err.empty()) err = SPECD_GPU_CHECK_NOEXCEPT(cudaStreamSynchronize(stream_));
  if (err.empty()) err = SPECD_GPU_CHECK_NOEXCEPT(cudaFree(error_));
  if (err.empty()) err = SPECD_GPU_CHECK_NOEXCEPT(cudaStreamDestroy(stream_));
  if (!err.empty()) host_.log(SPECD_LOG_WARN, vendor().id, "device_close: " + err);
}

void GpuDevice::bind() {
  SPECD_GPU_CHECK(cudaSetDevice(index_));
}

void GpuDevice::finish() {
  int flag = 0;
  SPECD_GPU_CHECK(cudaMemcpyAsync(&flag, error_, sizeof(int), cudaMemcpyDeviceToHost, stream_));
  SPECD_GPU_CHECK(cudaStreamSynchronize(stream_));
  if (flag) {
    SPECD_GPU_CHECK(cudaMemsetAsync(error_, 0, sizeof(int), stream_));
    throw sdk::invalid_argument(
        "attention or set_rows: an earlier call had invalid indices (a mask's prefix_len, "
        "extra_begin or extra_slots out of range or not increasing, a block table outside the "
        "pool, or a set_rows index outside dst); its output rows are NaN or unwritten");
  }
}

std::vector<int32_t> GpuDevice::read_i32_row(const Mat& row) {
  std::vector<int32_t> v(static_cast<size_t>(row.cols));
  SPECD_GPU_CHECK(cudaMemcpyAsync(v.data(), row.p, v.size() * 4, cudaMemcpyDeviceToHost, stream_));
  SPECD_GPU_CHECK(cudaStreamSynchronize(stream_));
  return v;
}

void GpuDevice::info(specd_device_info& info) {
  info.threads = units_;
  info.memory_bytes = memory_;
  info.invariant_max_rows = static_cast<uint32_t>(kInvariantRows);
  std::snprintf(info.name, sizeof(info.name), "%s", name_.c_str());
}

void GpuDevice::synchronize() {
  bind();
  finish();
}

specd_buffer* GpuDevice::alloc(uint64_t size) {
  bind();
  const uint64_t rounded = size == 0 ? 256 : (size + 255) / 256 * 256;
  void* p = nullptr;
  SPECD_GPU_CHECK(cudaMalloc(&p, rounded));
  auto* b = new (std::nothrow) specd_buffer;
  if (!b) {
    SPECD_GPU_CHECK_NOEXCEPT(cudaFree(p));
    throw sdk::PluginError(SPECD_STATUS_OUT_OF_MEMORY, "buffer_alloc: out of host memory");
  }
  b->data = static_cast<uint8_t*>(p);
  b->size = size;
  return b;
}

void GpuDevice::free(specd_buffer* buffer) {
  // cudaFree waits for queued work on the device, so a buffer still read by an op is safe.
  std::string err = SPECD_GPU_CHECK_NOEXCEPT(cudaSetDevice(index_));
  if (err.empty()) err = SPECD_GPU_CHECK_NOEXCEPT(cudaFree(buffer->data));
  if (!err.empty()) host_.log(SPECD_LOG_WARN, vendor().id, "buffer_free: " + err);
  delete buffer;
}

void GpuDevice::upload(specd_buffer* dst, uint64_t offset, const void* src, uint64_t size) {
  check_range(dst, offset, size, "buffer_upload");
  if (!size) return;
  bind();
  // `src` is borrowed for the call only: wait for the copy (pageable or pinned alike).
  SPECD_GPU_CHECK(cudaMemcpyAsync(dst->data + offset, src, size, cudaMemcpyHostToDevice, stream_));
  SPECD_GPU_CHECK(cudaStreamSynchronize(stream_));
}

void GpuDevice::download(const specd_buffer* src, uint64_t offset, void* dst, uint64_t size) {
  check_range(src, offset, size, "buffer_download");
  bind();
  if (size)
    SPECD_GPU_CHECK(
        cudaMemcpyAsync(dst, src->data + offset, size, cudaMemcpyDeviceToHost, stream_));
  finish();
}

void GpuDevice::copy(specd_buffer* dst, uint64_t dst_offset, const specd_buffer* src,
                     uint64_t src_offset, uint64_t size) {
  check_range(dst, dst_offset, size, "buffer_copy");
  check_range(src, src_offset, size, "buffer_copy");
  if (!size) return;
  bind();
  uint8_t* d = dst->data + dst_offset;
  const uint8_t* s = src->data + src_offset;
  if (d == s) return;
  if (d < s + size && s < d + size) {  // memmove semantics: stage through scratch
    void* tmp = scratch_->get(size);
    SPECD_GPU_CHECK(cudaMemcpyAsync(tmp, s, size, cudaMemcpyDeviceToDevice, stream_));
    SPECD_GPU_CHECK(cudaMemcpyAsync(d, tmp, size, cudaMemcpyDeviceToDevice, stream_));
  } else {
    SPECD_GPU_CHECK(cudaMemcpyAsync(d, s, size, cudaMemcpyDeviceToDevice, stream_));
  }
}

void GpuDevice::matmul(const specd_view& xv, const specd_view& wv, const specd_view& yv) {
  const Mat x = check_view(&xv, "matmul", "x", {SPECD_DTYPE_F32});
  const Mat w = check_view(&wv, "matmul", "w", kWeightTypes);
  const Mat y = check_view(&yv, "matmul", "y", {SPECD_DTYPE_F32});
  if (overlaps(y, x) || overlaps(y, w)) fail("matmul", "y overlaps an input");
  if (x.rows == 0 || w.rows == 0) return;
  bind();
  const GemmArgs a{f32(x),
                   w.p,
                   reinterpret_cast<float*>(y.p),
                   x.rows,
                   w.rows,
                   x.cols,
                   x.stride_bytes / 4,
                   w.stride_bytes,
                   y.stride_bytes / 4,
                   w.dtype};
  if (x.rows <= kInvariantRows) {
    SPECD_GPU_CHECK(launch_gemm_rows(a, stream_));
  } else {
    large_->run(a, *scratch_);
  }
}

void GpuDevice::rms_norm(const specd_view& xv, const specd_view& wv, float eps,
                         const specd_view& yv) {
  const Mat x = check_view(&xv, "rms_norm", "x", {SPECD_DTYPE_F32});
  const Mat w = check_view(&wv, "rms_norm", "weight", {SPECD_DTYPE_F32});
  const Mat y = check_view(&yv, "rms_norm", "y", {SPECD_DTYPE_F32});
  if (x.rows == 0) return;
  bind();
  SPECD_GPU_CHECK(launch_rms_norm(x, f32(w), eps, y, stream_));
}

void GpuDevice::rope(const specd_view& xv, const specd_view& pv, const specd_rope_params& p) {
  const Mat x = check_view(&xv, "rope", "x", {SPECD_DTYPE_F32});
  const Mat pos = check_view(&pv, "rope", "positions", {SPECD_DTYPE_I32});
  const sdk::RopeOptions o = sdk::rope_options(p);
  const float* factors = nullptr;
  if (o.freq_factors) {
    factors = f32(check_view(o.freq_factors, "rope", "freq_factors", {SPECD_DTYPE_F32}));
  }
  if (x.rows == 0 || p.n_rot == 0) return;
  bind();
  const sdk::RopeYarn yarn = sdk::rope_yarn(p, o);
  const RopeArgs a{i32(pos),
                   factors,
                   static_cast<int>(p.n_head),
                   static_cast<int>(p.head_dim),
                   static_cast<int>(p.n_rot),
                   o.mode == SPECD_ROPE_NEOX ? 1 : 0,
                   p.base,
                   o.freq_scale,
                   yarn.ext_factor,
                   yarn.lo,
                   yarn.span,
                   yarn.mscale};
  SPECD_GPU_CHECK(launch_rope(x, a, stream_));
}

void GpuDevice::get_rows(const specd_view& tv, const specd_view& iv, const specd_view& yv) {
  const Mat t = check_view(&tv, "get_rows", "table", kWeightTypes);
  const Mat ids = check_view(&iv, "get_rows", "ids", {SPECD_DTYPE_I32});
  const Mat y = check_view(&yv, "get_rows", "y", {SPECD_DTYPE_F32});
  if (y.rows == 0) return;
  bind();
  // Ids are checked on the host (one small copy per call) so a bad id is reported by this
  // call, as on the CPU, and never read out of range.
  const std::vector<int32_t> id = read_i32_row(ids);
  sdk::check_row_ids("get_rows", "id", id.data(), static_cast<int64_t>(id.size()), t.rows);
  SPECD_GPU_CHECK(launch_get_rows(t, i32(ids), y, stream_));
}

void GpuDevice::attention(const specd_view& qv, const specd_view& kv, const specd_view& vv,
                          const specd_attention_mask& mask, const specd_attention_params& p,
                          const specd_view& ov) {
  run_attention("attention", qv, kv, vv, mask, nullptr, p, ov);
}

void GpuDevice::attention_paged(const specd_view& qv, const specd_view& kv, const specd_view& vv,
                                const specd_attention_mask& mask, const specd_kv_pages& pages,
                                const specd_attention_params& p, const specd_view& ov) {
  run_attention("attention_paged", qv, kv, vv, mask, &pages, p, ov);
}

void GpuDevice::run_attention(const char* op, const specd_view& qv, const specd_view& kv,
                              const specd_view& vv, const specd_attention_mask& mask,
                              const specd_kv_pages* pages, const specd_attention_params& p,
                              const specd_view& ov) {
  const Mat q = check_view(&qv, op, "q", {SPECD_DTYPE_F32});
  // A paged pool may hold f16 or q8_0 rows, decoded exactly as they are read.
  const Mat k =
      pages ? check_view(&kv, op, "k_pool", {SPECD_DTYPE_F32, SPECD_DTYPE_F16, SPECD_DTYPE_Q8_0})
            : check_view(&kv, op, "k_cache", {SPECD_DTYPE_F32});
  const Mat v =
      pages ? check_view(&vv, op, "v_pool", {SPECD_DTYPE_F32, SPECD_DTYPE_F16, SPECD_DTYPE_Q8_0})
            : check_view(&vv, op, "v_cache", {SPECD_DTYPE_F32});
  const Mat out = check_view(&ov, op, "out", {SPECD_DTYPE_F32});
  const Mat pre = check_view(mask.prefix_len, op, "mask.prefix_len", {SPECD_DTYPE_I32});
  const Mat beg = check_view(mask.extra_begin, op, "mask.extra_begin", {SPECD_DTYPE_I32});
  Mat tab, tb;
  if (pages) {
    tab = check_view(pages->block_table, op, "pages.block_table", {SPECD_DTYPE_I32});
    tb = check_view(pages->table_begin, op, "pages.table_begin", {SPECD_DTYPE_I32});
  }
  if (overlaps(out, q) || overlaps(out, k) || overlaps(out, v)) fail(op, "out overlaps an input");
  // What the kernel supports (its per-thread head buffer, its grid's row dimension).
  if (p.head_dim > static_cast<uint32_t>(kMaxHeadDim))
    throw sdk::PluginError(SPECD_STATUS_UNSUPPORTED, std::string(op) + ": head_dim " +
                                                         std::to_string(p.head_dim) + " > " +
                                                         std::to_string(kMaxHeadDim));
  const int64_t m = q.rows;
  if (m > 65535)
    throw sdk::PluginError(SPECD_STATUS_UNSUPPORTED, std::string(op) + ": more than 65535 rows");
  Mat ex;
  if (mask.extra_slots)
    ex = check_view(mask.extra_slots, op, "mask.extra_slots", {SPECD_DTYPE_I32});
  // ABI 0.8 (none from an older host); the adapter checked the sinks' shape.
  const sdk::AttentionOptions o = sdk::attention_options(p);
  Mat sinks;
  if (o.sinks) sinks = check_view(o.sinks, op, "params.sinks", {SPECD_DTYPE_F32});
  if (m == 0) return;
  bind();
  AttentionArgs a{};
  a.q = f32(q);
  a.k = k.p;
  a.v = v.p;
  a.out = reinterpret_cast<float*>(out.p);
  a.ldq = q.stride_bytes / 4;
  a.ldk = k.stride_bytes;
  a.ldv = v.stride_bytes;
  a.ldo = out.stride_bytes / 4;
  a.kv_dtype = k.dtype;
  a.prefix = i32(pre);
  a.begin = i32(beg);
  a.extra = ex.p ? i32(ex) : nullptr;
  a.n_extra_cols = ex.p ? ex.cols : 0;
  a.capacity = k.rows;
  if (pages) {
    a.table = i32(tab);
    a.table_begin = i32(tb);
    a.n_table = tab.cols;
    a.block_rows = pages->block_rows;
  }
  a.m = m;
  a.n_head = static_cast<int>(p.n_head);
  a.n_head_kv = static_cast<int>(p.n_head_kv);
  a.head_dim = static_cast<int>(p.head_dim);
  a.scale = p.scale;
  a.window = o.window;
  a.sinks = sinks.p ? f32(sinks) : nullptr;
  a.error = error_;
  SPECD_GPU_CHECK(launch_attention(a, stream_));
}

void GpuDevice::set_rows(const specd_view& sv, const specd_view& iv, const specd_view& dv) {
  const std::initializer_list<specd_dtype> any = {
      SPECD_DTYPE_F32,   SPECD_DTYPE_F16,  SPECD_DTYPE_BF16, SPECD_DTYPE_Q8_0,   SPECD_DTYPE_Q4_0,
      SPECD_DTYPE_Q4_1,  SPECD_DTYPE_Q5_0, SPECD_DTYPE_Q5_1, SPECD_DTYPE_Q2_K,   SPECD_DTYPE_Q3_K,
      SPECD_DTYPE_Q4_K,  SPECD_DTYPE_Q5_K, SPECD_DTYPE_Q6_K, SPECD_DTYPE_IQ4_NL, SPECD_DTYPE_IQ4_XS,
      SPECD_DTYPE_MXFP4, SPECD_DTYPE_I32};
  const Mat s = check_view(&sv, "set_rows", "src", any);
  const Mat idx = check_view(&iv, "set_rows", "indices", {SPECD_DTYPE_I32});
  const Mat d = check_view(&dv, "set_rows", "dst", any);
  if (overlaps(s, d) || overlaps(idx, d)) fail("set_rows", "dst overlaps src or indices");
  if (s.rows == 0) return;
  bind();
  // The indices stay on the device (no synchronization per call): each is range-checked by
  // the kernel (the error flag, reported by the next synchronize or download); distinctness,
  // which the host guarantees, is not checked here.
  if (s.dtype != d.dtype) {
    SPECD_GPU_CHECK(launch_set_rows_encoded(s, i32(idx), d, error_, stream_));
    return;
  }
  SPECD_GPU_CHECK(
      launch_set_rows(s, i32(idx), d, static_cast<int64_t>(row_bytes(s)), error_, stream_));
}

void GpuDevice::gated_delta_net(const specd_view& qkv, const specd_view& alpha,
                                const specd_view& beta, const specd_view& conv_weight,
                                const specd_view& dt_bias, const specd_view& av,
                                const specd_view& conv_states, const specd_view& ssm_states,
                                const specd_view& state_in, const specd_view& state_out,
                                const specd_delta_net_params& p, const specd_view& out) {
  const char* op = "gated_delta_net";
  const std::initializer_list<specd_dtype> f32 = {SPECD_DTYPE_F32};
  DeltaNetArgs a{};
  a.qkv = check_view(&qkv, op, "qkv", f32);
  a.alpha = check_view(&alpha, op, "alpha", f32);
  a.beta = check_view(&beta, op, "beta", f32);
  a.conv_weight = check_view(&conv_weight, op, "conv_weight", f32);
  a.dt_bias = check_view(&dt_bias, op, "dt_bias", f32);
  a.a = check_view(&av, op, "a", f32);
  a.conv_states = check_view(&conv_states, op, "conv_states", f32);
  a.ssm_states = check_view(&ssm_states, op, "ssm_states", f32);
  a.out = check_view(&out, op, "out", f32);
  const Mat in = check_view(&state_in, op, "rows.state_in", {SPECD_DTYPE_I32});
  const Mat outs = check_view(&state_out, op, "rows.state_out", {SPECD_DTYPE_I32});
  if (p.conv_kernel > 9)
    throw sdk::PluginError(SPECD_STATUS_UNSUPPORTED,
                           "gated_delta_net: conv_kernel above 9 is not implemented here");
  const std::initializer_list<const Mat*> inputs = {&a.qkv,         &a.dt_bias, &a.alpha, &a.beta,
                                                    &a.conv_weight, &a.a,       &in,      &outs};
  for (const Mat* input : inputs)
    for (const Mat* written : {&a.out, &a.conv_states, &a.ssm_states})
      if (overlaps(*input, *written)) fail(op, "an output overlaps an input");
  if (overlaps(a.out, a.conv_states) || overlaps(a.out, a.ssm_states) ||
      overlaps(a.conv_states, a.ssm_states))
    fail(op, "out, conv_states and ssm_states overlap");
  a.m = a.qkv.rows;
  if (a.m == 0) return;
  // The slots are read on the host once (a synchronization): a kernel that wrote outside the
  // pool would corrupt other sequences' states.
  const std::vector<int32_t> ins = read_i32_row(in), outs_host = read_i32_row(outs);
  sdk::check_state_slots(ins.data(), outs_host.data(), a.m, a.conv_states.rows);
  a.state_in = i32(in);
  a.state_out = i32(outs);
  a.n_key_heads = p.n_key_heads;
  a.n_value_heads = p.n_value_heads;
  a.head_dim = p.head_dim;
  a.conv_kernel = p.conv_kernel;
  a.eps = p.eps;
  const uint64_t c_bytes = static_cast<uint64_t>(a.m * a.qkv.cols) * 4;
  const uint64_t work_bytes = static_cast<uint64_t>(a.n_value_heads * a.head_dim * a.head_dim) * 4;
  auto* scratch = static_cast<uint8_t*>(scratch_->get(c_bytes + work_bytes));
  a.c = reinterpret_cast<float*>(scratch);
  a.work = reinterpret_cast<float*>(scratch + c_bytes);
  bind();
  SPECD_GPU_CHECK(launch_gated_delta_net(a, stream_));
}

void GpuDevice::mul_sigmoid(const specd_view& xv, const specd_view& gv, const specd_view& yv) {
  const Mat x = check_view(&xv, "mul_sigmoid", "x", {SPECD_DTYPE_F32});
  const Mat g = check_view(&gv, "mul_sigmoid", "gate", {SPECD_DTYPE_F32});
  const Mat y = check_view(&yv, "mul_sigmoid", "y", {SPECD_DTYPE_F32});
  if (overlaps(y, g)) fail("mul_sigmoid", "y overlaps gate");
  if (overlaps(y, x) && (y.p != x.p || y.stride_bytes != x.stride_bytes))
    fail("mul_sigmoid", "y overlaps x without being x");
  if (x.rows == 0) return;
  bind();
  SPECD_GPU_CHECK(launch_mul_sigmoid(x, g, y, stream_));
}

void GpuDevice::swiglu(const specd_view& gv, const specd_view& uv, const specd_view& yv) {
  const Mat g = check_view(&gv, "swiglu", "gate", {SPECD_DTYPE_F32});
  const Mat u = check_view(&uv, "swiglu", "up", {SPECD_DTYPE_F32});
  const Mat y = check_view(&yv, "swiglu", "y", {SPECD_DTYPE_F32});
  if (g.rows == 0) return;
  bind();
  SPECD_GPU_CHECK(launch_swiglu(g, u, y, stream_));
}

void GpuDevice::swiglu_oai(const specd_view& gv, const specd_view& uv, float alpha, float limit,
                           const specd_view& yv) {
  const Mat g = check_view(&gv, "swiglu_oai", "gate", {SPECD_DTYPE_F32});
  const Mat u = check_view(&uv, "swiglu_oai", "up", {SPECD_DTYPE_F32});
  const Mat y = check_view(&yv, "swiglu_oai", "y", {SPECD_DTYPE_F32});
  // As for swiglu, overlap is not checked: one thread reads its element before writing it,
  // so y may be gate or up (the halves of a fused projection interleave: a byte-range check
  // would refuse y = gate there).
  if (g.rows == 0) return;
  bind();
  SPECD_GPU_CHECK(launch_swiglu_oai(g, u, alpha, limit, y, stream_));
}

void GpuDevice::add(const specd_view& av, const specd_view& bv, const specd_view& yv) {
  const Mat a = check_view(&av, "add", "a", {SPECD_DTYPE_F32});
  const Mat b = check_view(&bv, "add", "b", {SPECD_DTYPE_F32});
  const Mat y = check_view(&yv, "add", "y", {SPECD_DTYPE_F32});
  if (a.rows == 0) return;
  bind();
  SPECD_GPU_CHECK(launch_add(a, b, y, stream_));
}

void GpuDevice::copy_rows(const specd_view& sv, const specd_view& iv, const specd_view& dv) {
  const std::initializer_list<specd_dtype> any = {
      SPECD_DTYPE_F32,   SPECD_DTYPE_F16,  SPECD_DTYPE_BF16, SPECD_DTYPE_Q8_0,   SPECD_DTYPE_Q4_0,
      SPECD_DTYPE_Q4_1,  SPECD_DTYPE_Q5_0, SPECD_DTYPE_Q5_1, SPECD_DTYPE_Q2_K,   SPECD_DTYPE_Q3_K,
      SPECD_DTYPE_Q4_K,  SPECD_DTYPE_Q5_K, SPECD_DTYPE_Q6_K, SPECD_DTYPE_IQ4_NL, SPECD_DTYPE_IQ4_XS,
      SPECD_DTYPE_MXFP4, SPECD_DTYPE_I32};
  const Mat s = check_view(&sv, "copy_rows", "src", any);
  const Mat idx = check_view(&iv, "copy_rows", "indices", {SPECD_DTYPE_I32});
  const Mat d = check_view(&dv, "copy_rows", "dst", any);
  if (d.rows == 0) return;
  bind();
  const std::vector<int32_t> ix = read_i32_row(idx);
  sdk::check_row_ids("copy_rows", "index", ix.data(), static_cast<int64_t>(ix.size()), s.rows);
  const int64_t rb = static_cast<int64_t>(row_bytes(s));
  if (!overlaps(s, d)) {
    SPECD_GPU_CHECK(launch_copy_rows(s, i32(idx), d, rb, stream_));
    return;
  }
  // Only compaction towards the front is defined (backend.h): dst is rows first.. of src (same
  // stride), indices strictly increasing with indices[i] >= first + i. Moving rows in
  // increasing i then reads every source before it is overwritten, i.e. it is a gather from
  // the original rows: gather into scratch, then copy back.
  const int64_t delta = d.p - s.p;
  if (delta < 0 || s.stride_bytes != d.stride_bytes || delta % s.stride_bytes != 0)
    fail("copy_rows", "dst overlaps src but is not a row range of it");
  const int64_t first = delta / s.stride_bytes;
  for (size_t i = 0; i < ix.size(); ++i)
    if (ix[i] < first + static_cast<int64_t>(i) || (i > 0 && ix[i] <= ix[i - 1]))
      fail("copy_rows", "in-place indices must increase and not precede their destination row");
  Mat staged = d;
  staged.p = static_cast<uint8_t*>(scratch_->get(static_cast<uint64_t>(d.rows * rb)));
  staged.stride_bytes = rb;
  SPECD_GPU_CHECK(launch_copy_rows(s, i32(idx), staged, rb, stream_));
  SPECD_GPU_CHECK(cudaMemcpy2DAsync(
      d.p, static_cast<size_t>(d.stride_bytes), staged.p, static_cast<size_t>(rb),
      static_cast<size_t>(rb), static_cast<size_t>(d.rows), cudaMemcpyDeviceToDevice, stream_));
}

}  // namespace specd::gpu
