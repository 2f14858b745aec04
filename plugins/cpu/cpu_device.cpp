#include "cpu_device.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gemm/decode.hpp"
#include "ops/delta_net.hpp"
#include "ops/ops.hpp"
#include "qint/packed_weights.hpp"
#include "runtime/huge_pages.hpp"
#include "specd/cpp/backend.hpp"

namespace specd::cpu {
namespace {

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw sdk::invalid_argument(std::string(op) + ": " + what);
}

void check_range(const specd_buffer* b, uint64_t offset, uint64_t size, const char* op) {
  if (!b) fail(op, "null buffer");
  sdk::check_range(op, offset, size, b->size);
}

// A view of a packed buffer, checked like any view and then to read whole rows of its matrix;
// its Mat's p is the buffer's start (matmul points it at the view's first group for the kernel).
Mat check_packed_view(const specd_view* v, const char* op, const char* arg) {
  sdk::check_view_extent(v, op, arg, {v->buffer->packed_dtype},
                         [](const specd_buffer* b) { return b->size; });
  const int64_t row_bytes = v->buffer->packed_row_bytes;
  if (static_cast<int64_t>(sdk::dtype_row_bytes(v->dtype, v->cols)) != row_bytes ||
      v->row_stride != row_bytes || v->offset % static_cast<uint64_t>(row_bytes) != 0)
    fail(op, std::string(arg) +
                 ": a packed weight buffer (buffer_wrap_weights) is read only as whole rows "
                 "of its matrix");
  Mat m;
  m.p = v->buffer->data;
  m.rows = v->rows;
  m.cols = v->cols;
  m.stride = row_bytes;
  m.dtype = v->dtype;
  return m;
}

// Rows [first, first + count) of a packed buffer's matrix (of `cols` values) in GGUF layout, in
// `plain`.
Mat unpack(const specd_buffer* b, int64_t first, int64_t count, int64_t cols,
           std::vector<uint8_t>& plain) {
  const int64_t row_bytes = b->packed_row_bytes;
  plain.resize(static_cast<size_t>(count * row_bytes));
  packed_weights::unpack_rows(b->packed_dtype, b->data, row_bytes, first, count, plain.data());
  Mat m;
  m.p = plain.data();
  m.rows = count;
  m.cols = cols;
  m.stride = row_bytes;
  m.dtype = b->packed_dtype;
  return m;
}

// `size` GGUF bytes at `offset` of a packed buffer, at `dst`.
void read_packed(const specd_buffer* b, uint64_t offset, uint64_t size, uint8_t* dst) {
  if (size == 0) return;
  const uint64_t row_bytes = static_cast<uint64_t>(b->packed_row_bytes);
  const uint64_t first = offset / row_bytes, end = (offset + size + row_bytes - 1) / row_bytes;
  std::vector<uint8_t> plain;
  const Mat rows =
      unpack(b, static_cast<int64_t>(first), static_cast<int64_t>(end - first), 0, plain);
  std::memcpy(dst, rows.p + (offset - first * row_bytes), size);
}

bool overlaps(const Mat& a, const Mat& b) {
  if (a.rows == 0 || b.rows == 0) return false;
  const uint8_t* a_end = a.p + (a.rows - 1) * a.stride + sdk::dtype_row_bytes(a.dtype, a.cols);
  const uint8_t* b_end = b.p + (b.rows - 1) * b.stride + sdk::dtype_row_bytes(b.dtype, b.cols);
  return a.p < b_end && b.p < a_end;
}

}  // namespace

Mat check_view(const specd_view* v, const char* op, const char* arg,
               std::initializer_list<specd_dtype> dtypes, bool output) {
  sdk::check_view_extent(v, op, arg, dtypes, [](const specd_buffer* b) { return b->size; });
  const std::string where = std::string(arg) + ": ";
  if (v->buffer->packed_row_bytes)
    fail(op, where +
                 "a packed weight buffer (buffer_wrap_weights) is read only as matmul's w "
                 "and get_rows' table");
  if (output && !v->buffer->owned)
    fail(op, where + "output into a read-only (wrapped or weight) buffer");
  if ((v->dtype == SPECD_DTYPE_F32 || v->dtype == SPECD_DTYPE_I32) &&
      ((v->offset | static_cast<uint64_t>(v->row_stride)) % 4 != 0 ||
       reinterpret_cast<uintptr_t>(v->buffer->data) % 4 != 0))
    fail(op, where + "f32/i32 views must be 4-byte aligned");
  Mat m;
  m.p = v->buffer->data + v->offset;
  m.rows = v->rows;
  m.cols = v->cols;
  m.stride = v->row_stride;
  m.dtype = v->dtype;
  return m;
}

uint32_t CpuDevice::score(sdk::Host, std::string& reason) {
  reason.clear();
  return 1;
}

CpuDevice::CpuDevice(sdk::Host host, const specd_device_params& params)
    : host_(host), huge_pages_(huge_pages_wanted()), weight_arena_(huge_pages_) {
  int threads = static_cast<int>(params.threads);
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  if (threads > 256) throw sdk::invalid_argument("cpu: threads must be <= 256");
  kernel_ = select_kernel();
  quant_ = select_quant();
  packs_ =
      kernel_ == GemmKernel::kAvx512 && quant_ == QuantFamily::kInt8 && avx512_vnni_available();
  pool_ = std::make_unique<ThreadPool>(threads);
  specd_device_info about{};
  info(about);
  profile_ = OpProfile::from_env(about.name);
}

void CpuDevice::info(specd_device_info& info) {
  info.threads = static_cast<uint32_t>(pool_->size());
  info.memory_bytes = 0;
  info.invariant_max_rows = static_cast<uint32_t>(kSmallMaxRows);
  const std::string name = "cpu (" + std::to_string(pool_->size()) + " threads, " +
                           kernel_name(kernel_) + ", " + quant_name(quant_) + ")";
  std::snprintf(info.name, sizeof(info.name), "%s", name.c_str());
}

// Buffers of 2 MiB or more (a layer of a KV pool, sized for a server's whole budget) are
// mappings whose pages are backed as they are first written, on huge pages when the device
// asks for them (huge_pages.hpp).
specd_buffer* CpuDevice::alloc(uint64_t size) {
  const uint64_t rounded = (size + 63) / 64 * 64;
  const bool mapped = rounded >= size && rounded >= kHugePageBytes;
  void* p = rounded < size ? nullptr  // within 63 bytes of 2^64
            : mapped       ? alloc_reserved(rounded, huge_pages_)
                           : std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!p)
    throw sdk::PluginError(SPECD_STATUS_OUT_OF_MEMORY,
                           "cpu: cannot allocate " + std::to_string(size) + " bytes");
  auto* b = new specd_buffer;
  b->data = static_cast<uint8_t*>(p);
  b->size = size;
  b->owned = true;
  b->mapped_bytes = mapped ? rounded : 0;
  return b;
}

void CpuDevice::free(specd_buffer* buffer) {
  if (buffer->arena_chunk)
    weight_arena_.release(buffer->arena_chunk);
  else if (buffer->mapped_bytes)
    free_reserved(buffer->data, buffer->mapped_bytes);
  else if (buffer->owned)
    std::free(buffer->data);
  delete buffer;
}

specd_buffer* CpuDevice::wrap_host(const void* data, uint64_t size) {
  if (!data && size) throw sdk::invalid_argument("buffer_wrap_host: null data");
  auto* b = new specd_buffer;
  b->data = static_cast<uint8_t*>(const_cast<void*>(data));
  b->size = size;
  b->owned = false;
  return b;
}

// q4_K, q6_K and q8_0 matrices are packed for the AVX-512 kernels; with huge pages, anything else
// is copied as it is. Both go into the weight arena, and the host may then drop the file's pages.
// Without huge pages, unpacked matrices are wrapped in place.
specd_buffer* CpuDevice::wrap_weights(const void* data, uint64_t size, specd_dtype dtype,
                                      int64_t rows, int64_t cols, bool& copied) {
  copied = false;
  const uint64_t row_bytes = cols > 0 ? sdk::dtype_row_bytes(dtype, cols) : 0;
  if (!data || rows <= 0 || row_bytes == 0 || size / row_bytes != static_cast<uint64_t>(rows) ||
      size % row_bytes != 0)
    throw sdk::invalid_argument("buffer_wrap_weights: " + std::to_string(size) + " bytes are not " +
                                std::to_string(rows) + " rows of " + std::to_string(cols) +
                                " values of " + sdk::dtype_name(dtype));
  const bool packs = packed_weights::packs(dtype) && packs_;
  if (!packs && !huge_pages_) return wrap_host(data, size);
  const int64_t rb = static_cast<int64_t>(row_bytes);
  const auto bytes = packs ? static_cast<uint64_t>(packed_weights::packed_bytes(rows, rb)) : size;
  auto b = std::make_unique<specd_buffer>();
  b->data = weight_arena_.allocate(bytes, b->arena_chunk);
  if (!b->data)
    throw sdk::PluginError(SPECD_STATUS_OUT_OF_MEMORY,
                           "cpu: cannot allocate " + std::to_string(bytes) + " bytes");
  b->size = size;
  if (packs) {
    packed_weights::pack(dtype, static_cast<const uint8_t*>(data), rows, rb, b->data);
    b->packed_row_bytes = rb;
    b->packed_dtype = dtype;
  } else {
    std::memcpy(b->data, data, size);
  }
  copied = true;
  return b.release();
}

void CpuDevice::upload(specd_buffer* dst, uint64_t offset, const void* src, uint64_t size) {
  check_range(dst, offset, size, "buffer_upload");
  if (!dst->owned || dst->packed_row_bytes) fail("buffer_upload", "read-only (weight) buffer");
  if (size) std::memcpy(dst->data + offset, src, size);
}

void CpuDevice::download(const specd_buffer* src, uint64_t offset, void* dst, uint64_t size) {
  check_range(src, offset, size, "buffer_download");
  if (src->packed_row_bytes)
    read_packed(src, offset, size, static_cast<uint8_t*>(dst));
  else if (size)
    std::memcpy(dst, src->data + offset, size);
}

void CpuDevice::copy(specd_buffer* dst, uint64_t dst_offset, const specd_buffer* src,
                     uint64_t src_offset, uint64_t size) {
  check_range(dst, dst_offset, size, "buffer_copy");
  check_range(src, src_offset, size, "buffer_copy");
  if (!dst->owned || dst->packed_row_bytes)
    fail("buffer_copy", "read-only (wrapped or weight) destination");
  if (src->packed_row_bytes)
    read_packed(src, src_offset, size, dst->data + dst_offset);
  else if (size)
    std::memmove(dst->data + dst_offset, src->data + src_offset, size);
}

void CpuDevice::matmul(const specd_view& xv, const specd_view& wv, const specd_view& yv) {
  const OpTimer timer(profile_.get(), "matmul", &xv, false, &wv);
  const Mat x = check_view(&xv, "matmul", "x", {SPECD_DTYPE_F32});
  const bool packed = wv.buffer && wv.buffer->packed_row_bytes;
  Mat w = packed ? check_packed_view(&wv, "matmul", "w")
                 : check_view(&wv, "matmul", "w", {SPECD_CPU_WEIGHT_DTYPES});
  const Mat y = check_view(&yv, "matmul", "y", {SPECD_DTYPE_F32}, true);
  if (overlaps(y, x) || (!packed && overlaps(y, w))) fail("matmul", "y overlaps an input");
  if (x.rows == 0) return;
  // The integer family computes every m (prefill too) in chunks of at most kSmallMaxRows rows:
  // one kernel and one set of bits for a row whatever the batch, and at 65 rows 10x faster
  // than decoding the weights to f32 for oneDNN.
  const bool int8 = quant_ == QuantFamily::kInt8 && int8_computes(w.dtype);
  // Packed weights go to their kernel when the view starts at a group of 16 rows; every other
  // path reads the rows unpacked (the same bytes).
  const int64_t group_rows = packed_weights::kGroup * w.stride;
  const bool packed_kernel = packed && (int8 || x.rows <= kSmallMaxRows) &&
                             wv.offset % static_cast<uint64_t>(group_rows) == 0;
  std::vector<uint8_t> plain;
  if (packed_kernel)
    w.p = wv.buffer->data +
          static_cast<int64_t>(wv.offset) / group_rows * packed_weights::group_bytes(w.stride);
  else if (packed)
    w = unpack(wv.buffer, static_cast<int64_t>(wv.offset) / w.stride, w.rows, w.cols, plain);
  GemmArgs a{reinterpret_cast<const float*>(x.p),
             w.p,
             reinterpret_cast<float*>(y.p),
             x.rows,
             w.rows,
             x.cols,
             x.stride / 4,
             w.stride,
             y.stride / 4,
             w.dtype,
             packed_kernel};
  if (int8) {
    gemm_int8(*pool_, kernel_, a);
  } else if (x.rows <= kSmallMaxRows) {
    gemm_small(*pool_, kernel_, a);
  } else {
    large_.run(*pool_, a);
  }
}

void CpuDevice::rms_norm(const specd_view& xv, const specd_view& wv, float eps,
                         const specd_view& yv) {
  const OpTimer timer(profile_.get(), "rms_norm", &xv);
  const Mat x = check_view(&xv, "rms_norm", "x", {SPECD_DTYPE_F32});
  const Mat w = check_view(&wv, "rms_norm", "weight", {SPECD_DTYPE_F32});
  const Mat y = check_view(&yv, "rms_norm", "y", {SPECD_DTYPE_F32}, true);
  cpu::rms_norm(*pool_, x, w, eps, y);
}

void CpuDevice::rope(const specd_view& xv, const specd_view& pv, const specd_rope_params& p) {
  const OpTimer timer(profile_.get(), "rope", &xv);
  const Mat x = check_view(&xv, "rope", "x", {SPECD_DTYPE_F32}, true);
  const Mat pos = check_view(&pv, "rope", "positions", {SPECD_DTYPE_I32});
  const sdk::RopeOptions o = sdk::rope_options(p);
  const float* factors = nullptr;
  if (o.freq_factors) {
    const Mat f = check_view(o.freq_factors, "rope", "freq_factors", {SPECD_DTYPE_F32});
    factors = reinterpret_cast<const float*>(f.p);
  }
  cpu::rope(*pool_, x, pos.i32_row(0),
            {p.n_head, p.head_dim, p.n_rot, p.base, o.mode == SPECD_ROPE_NEOX, o.freq_scale,
             factors, sdk::rope_yarn(p, o)});
}

void CpuDevice::get_rows(const specd_view& tv, const specd_view& iv, const specd_view& yv) {
  const OpTimer timer(profile_.get(), "get_rows", &yv);
  const bool packed = tv.buffer && tv.buffer->packed_row_bytes;
  const Mat t = packed ? check_packed_view(&tv, "get_rows", "table")
                       : check_view(&tv, "get_rows", "table", {SPECD_CPU_WEIGHT_DTYPES});
  const Mat ids = check_view(&iv, "get_rows", "ids", {SPECD_DTYPE_I32});
  const Mat y = check_view(&yv, "get_rows", "y", {SPECD_DTYPE_F32}, true);
  const int32_t* id = ids.i32_row(0);
  sdk::check_row_ids("get_rows", "id", id, ids.cols, t.rows);
  if (!packed) return cpu::get_rows(*pool_, t, id, y);
  // The requested rows unpacked, in order, then gathered as rows 0 .. m - 1.
  const int64_t first = static_cast<int64_t>(tv.offset) / t.stride;
  std::vector<uint8_t> plain(static_cast<size_t>(ids.cols * t.stride));
  std::vector<int32_t> order(static_cast<size_t>(ids.cols));
  for (int64_t i = 0; i < ids.cols; ++i) {
    packed_weights::unpack_rows(tv.buffer->packed_dtype, tv.buffer->data, t.stride, first + id[i],
                                1, plain.data() + i * t.stride);
    order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  }
  Mat rows = t;
  rows.p = plain.data();
  rows.rows = ids.cols;
  cpu::get_rows(*pool_, rows, order.data(), y);
}

namespace {

// The ABI 0.8 options of an attention call (none from an older host), its sinks view checked
// against its buffer (the adapter checked its shape).
AttentionExtras attention_extras(const specd_attention_params& p, const char* op) {
  const sdk::AttentionOptions o = sdk::attention_options(p);
  AttentionExtras x;
  x.window = o.window;
  if (o.sinks) x.sinks = check_view(o.sinks, op, "params.sinks", {SPECD_DTYPE_F32}).f32_row(0);
  return x;
}

}  // namespace

void CpuDevice::attention(const specd_view& qv, const specd_view& kv, const specd_view& vv,
                          const specd_attention_mask& mask, const specd_attention_params& p,
                          const specd_view& ov) {
  const OpTimer timer(profile_.get(), "attention", &qv);
  const char* op = "attention";
  const Mat q = check_view(&qv, op, "q", {SPECD_DTYPE_F32});
  const Mat k = check_view(&kv, op, "k_cache", {SPECD_DTYPE_F32});
  const Mat v = check_view(&vv, op, "v_cache", {SPECD_DTYPE_F32});
  const Mat out = check_view(&ov, op, "out", {SPECD_DTYPE_F32}, true);
  const Mat pre = check_view(mask.prefix_len, op, "mask.prefix_len", {SPECD_DTYPE_I32});
  const Mat beg = check_view(mask.extra_begin, op, "mask.extra_begin", {SPECD_DTYPE_I32});
  if (overlaps(out, q) || overlaps(out, k) || overlaps(out, v)) fail(op, "out overlaps an input");
  const int64_t m = q.rows;
  const int32_t* prefix = pre.i32_row(0);
  const int32_t* begin = beg.i32_row(0);
  const int64_t n_extra = begin[m];
  const int32_t* extra = nullptr;
  if (n_extra > 0) {
    const Mat ex = check_view(mask.extra_slots, op, "mask.extra_slots", {SPECD_DTYPE_I32});
    if (ex.cols < n_extra) fail(op, "mask.extra_slots shorter than extra_begin[m]");
    extra = ex.i32_row(0);
  }
  sdk::check_attention_mask(op, m, prefix, begin, extra, n_extra, [&](int64_t) { return k.rows; });
  cpu::attention(*pool_, kernel_, q, k, v, MaskRows{prefix, begin, extra}, p,
                 attention_extras(p, op), out);
}

void CpuDevice::attention_paged(const specd_view& qv, const specd_view& kv, const specd_view& vv,
                                const specd_attention_mask& mask, const specd_kv_pages& pages,
                                const specd_attention_params& p, const specd_view& ov) {
  const OpTimer timer(profile_.get(), "attention", &qv);
  const char* op = "attention_paged";
  const Mat q = check_view(&qv, op, "q", {SPECD_DTYPE_F32});
  const Mat k = check_view(&kv, op, "k_pool", {SPECD_DTYPE_F32, SPECD_DTYPE_F16, SPECD_DTYPE_Q8_0});
  const Mat v = check_view(&vv, op, "v_pool", {SPECD_DTYPE_F32, SPECD_DTYPE_F16, SPECD_DTYPE_Q8_0});
  const Mat out = check_view(&ov, op, "out", {SPECD_DTYPE_F32}, true);
  const Mat pre = check_view(mask.prefix_len, op, "mask.prefix_len", {SPECD_DTYPE_I32});
  const Mat beg = check_view(mask.extra_begin, op, "mask.extra_begin", {SPECD_DTYPE_I32});
  const Mat tab = check_view(pages.block_table, op, "pages.block_table", {SPECD_DTYPE_I32});
  const Mat tb = check_view(pages.table_begin, op, "pages.table_begin", {SPECD_DTYPE_I32});
  if (overlaps(out, q) || overlaps(out, k) || overlaps(out, v)) fail(op, "out overlaps an input");
  const int64_t m = q.rows, B = pages.block_rows;
  const int32_t* prefix = pre.i32_row(0);
  const int32_t* begin = beg.i32_row(0);
  const int32_t* table = tab.i32_row(0);
  const int32_t* table_begin = tb.i32_row(0);
  sdk::check_kv_pages(table, tab.cols, table_begin, m, k.rows / B);
  const int64_t n_extra = begin[m];
  const int32_t* extra = nullptr;
  if (n_extra > 0) {
    const Mat ex = check_view(mask.extra_slots, op, "mask.extra_slots", {SPECD_DTYPE_I32});
    if (ex.cols < n_extra) fail(op, "mask.extra_slots shorter than extra_begin[m]");
    extra = ex.i32_row(0);
  }
  sdk::check_attention_mask(op, m, prefix, begin, extra, n_extra,
                            [&](int64_t i) { return (tab.cols - table_begin[i]) * B; });
  cpu::attention(*pool_, kernel_, q, k, v, MaskRows{prefix, begin, extra, table, table_begin, B}, p,
                 attention_extras(p, op), out);
}

void CpuDevice::set_rows(const specd_view& sv, const specd_view& iv, const specd_view& dv) {
  const OpTimer timer(profile_.get(), "set_rows", &sv);
  const std::initializer_list<specd_dtype> any = {SPECD_CPU_WEIGHT_DTYPES, SPECD_DTYPE_I32};
  const Mat s = check_view(&sv, "set_rows", "src", any);
  const Mat idx = check_view(&iv, "set_rows", "indices", {SPECD_DTYPE_I32});
  const Mat d = check_view(&dv, "set_rows", "dst", any, true);
  const int32_t* ix = idx.i32_row(0);
  sdk::check_scatter_ids(ix, s.rows, d.rows);
  if (overlaps(s, d) || overlaps(idx, d)) fail("set_rows", "dst overlaps src or indices");
  cpu::set_rows(s, ix, d, static_cast<int64_t>(sdk::dtype_row_bytes(s.dtype, s.cols)));
}

void CpuDevice::gated_delta_net(const specd_view& qkv, const specd_view& alpha,
                                const specd_view& beta, const specd_view& conv_weight,
                                const specd_view& dt_bias, const specd_view& a,
                                const specd_view& conv_states, const specd_view& ssm_states,
                                const specd_view& state_in, const specd_view& state_out,
                                const specd_delta_net_params& p, const specd_view& out) {
  const char* op = "gated_delta_net";
  const OpTimer timer(profile_.get(), op, &qkv);
  const std::initializer_list<specd_dtype> f32 = {SPECD_DTYPE_F32};
  DeltaNetCall c;
  c.qkv = check_view(&qkv, op, "qkv", f32);
  c.alpha = check_view(&alpha, op, "alpha", f32);
  c.beta = check_view(&beta, op, "beta", f32);
  c.conv_weight = check_view(&conv_weight, op, "conv_weight", f32);
  c.dt_bias = check_view(&dt_bias, op, "dt_bias", f32);
  c.a = check_view(&a, op, "a", f32);
  c.conv_states = check_view(&conv_states, op, "conv_states", f32, true);
  c.ssm_states = check_view(&ssm_states, op, "ssm_states", f32, true);
  c.out = check_view(&out, op, "out", f32, true);
  const Mat in = check_view(&state_in, op, "rows.state_in", {SPECD_DTYPE_I32});
  const Mat outs = check_view(&state_out, op, "rows.state_out", {SPECD_DTYPE_I32});
  c.state_in = in.i32_row(0);
  c.state_out = outs.i32_row(0);
  c.p = p;
  if (p.conv_kernel > 9 || p.head_dim > 256)
    throw sdk::PluginError(SPECD_STATUS_UNSUPPORTED,
                           "gated_delta_net: conv_kernel above 9 or head_dim above 256 is not "
                           "implemented here");
  sdk::check_state_slots(c.state_in, c.state_out, c.qkv.rows, c.conv_states.rows);
  const std::initializer_list<const Mat*> inputs = {&c.qkv,         &c.dt_bias, &c.alpha, &c.beta,
                                                    &c.conv_weight, &c.a,       &in,      &outs};
  for (const Mat* input : inputs)
    for (const Mat* written : {&c.out, &c.conv_states, &c.ssm_states})
      if (overlaps(*input, *written)) fail(op, "an output overlaps an input");
  if (overlaps(c.out, c.conv_states) || overlaps(c.out, c.ssm_states) ||
      overlaps(c.conv_states, c.ssm_states))
    fail(op, "out, conv_states and ssm_states overlap");
  cpu::gated_delta_net(*pool_, c);
}

void CpuDevice::mul_sigmoid(const specd_view& xv, const specd_view& gv, const specd_view& yv) {
  const OpTimer timer(profile_.get(), "mul_sigmoid", &xv);
  const Mat x = check_view(&xv, "mul_sigmoid", "x", {SPECD_DTYPE_F32});
  const Mat g = check_view(&gv, "mul_sigmoid", "gate", {SPECD_DTYPE_F32});
  const Mat y = check_view(&yv, "mul_sigmoid", "y", {SPECD_DTYPE_F32}, true);
  if (overlaps(y, g)) fail("mul_sigmoid", "y overlaps gate");
  if (overlaps(y, x) && (y.p != x.p || y.stride != x.stride))
    fail("mul_sigmoid", "y overlaps x without being x");
  cpu::mul_sigmoid(*pool_, x, g, y);
}

void CpuDevice::swiglu(const specd_view& gv, const specd_view& uv, const specd_view& yv) {
  const OpTimer timer(profile_.get(), "swiglu", &gv);
  const Mat g = check_view(&gv, "swiglu", "gate", {SPECD_DTYPE_F32});
  const Mat u = check_view(&uv, "swiglu", "up", {SPECD_DTYPE_F32});
  const Mat y = check_view(&yv, "swiglu", "y", {SPECD_DTYPE_F32}, true);
  cpu::swiglu(*pool_, g, u, y);
}

void CpuDevice::swiglu_oai(const specd_view& gv, const specd_view& uv, float alpha, float limit,
                           const specd_view& yv) {
  const OpTimer timer(profile_.get(), "swiglu_oai", &gv);
  const Mat g = check_view(&gv, "swiglu_oai", "gate", {SPECD_DTYPE_F32});
  const Mat u = check_view(&uv, "swiglu_oai", "up", {SPECD_DTYPE_F32});
  const Mat y = check_view(&yv, "swiglu_oai", "y", {SPECD_DTYPE_F32}, true);
  // As for swiglu, overlap is not checked: y may be gate or up, and the halves of a fused
  // gate/up projection interleave, so a byte-range check would refuse y = gate there.
  cpu::swiglu_oai(*pool_, g, u, alpha, limit, y);
}

void CpuDevice::add(const specd_view& av, const specd_view& bv, const specd_view& yv) {
  const OpTimer timer(profile_.get(), "add", &yv);
  const Mat a = check_view(&av, "add", "a", {SPECD_DTYPE_F32});
  const Mat b = check_view(&bv, "add", "b", {SPECD_DTYPE_F32});
  const Mat y = check_view(&yv, "add", "y", {SPECD_DTYPE_F32}, true);
  cpu::add(*pool_, a, b, y);
}

void CpuDevice::copy_rows(const specd_view& sv, const specd_view& iv, const specd_view& dv) {
  const OpTimer timer(profile_.get(), "copy_rows", &iv, true);
  const std::initializer_list<specd_dtype> any = {SPECD_CPU_WEIGHT_DTYPES, SPECD_DTYPE_I32};
  const Mat s = check_view(&sv, "copy_rows", "src", any);
  const Mat idx = check_view(&iv, "copy_rows", "indices", {SPECD_DTYPE_I32});
  const Mat d = check_view(&dv, "copy_rows", "dst", any, true);
  const int32_t* ix = idx.i32_row(0);
  sdk::check_row_ids("copy_rows", "index", ix, d.rows, s.rows);
  if (overlaps(s, d)) {
    // Only compaction towards the front, dst being rows d0.. of src, is defined.
    const int64_t delta = d.p - s.p;
    if (delta < 0 || s.stride != d.stride || delta % s.stride != 0)
      fail("copy_rows", "dst overlaps src but is not a row range of it");
    const int64_t d0 = delta / s.stride;
    for (int64_t i = 0; i < d.rows; ++i)
      if (ix[i] < d0 + i || (i > 0 && ix[i] <= ix[i - 1]))
        fail("copy_rows", "in-place indices must increase and not precede their destination row");
  }
  cpu::copy_rows(s, ix, d, static_cast<int64_t>(sdk::dtype_row_bytes(s.dtype, s.cols)));
}

}  // namespace specd::cpu
