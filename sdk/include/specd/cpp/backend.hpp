// specd SDK — write a backend plugin as one C++ device class plus one export macro.
//
//   class MyDevice {
//    public:
//     static uint32_t score(specd::sdk::Host host, std::string& reason);  // 0 = cannot run
//     MyDevice(specd::sdk::Host host, const specd_device_params& params);
//     void info(specd_device_info& info);
//     void synchronize();
//     specd_buffer* alloc(uint64_t size);
//     void free(specd_buffer* buffer);  // must not throw
//     void upload(specd_buffer* dst, uint64_t offset, const void* src, uint64_t size);
//     void download(const specd_buffer* src, uint64_t offset, void* dst, uint64_t size);
//     void copy(specd_buffer* dst, uint64_t dst_offset, const specd_buffer* src,
//               uint64_t src_offset, uint64_t size);
//     void matmul(const specd_view& x, const specd_view& w, const specd_view& y);
//     void rms_norm(const specd_view& x, const specd_view& weight, float eps,
//                   const specd_view& y);
//     void rope(const specd_view& x, const specd_view& positions, const specd_rope_params& p);
//     void get_rows(const specd_view& table, const specd_view& ids, const specd_view& y);
//     void attention(const specd_view& q, const specd_view& k, const specd_view& v,
//                    const specd_attention_mask& mask, const specd_attention_params& p,
//                    const specd_view& out);
//     void swiglu(const specd_view& gate, const specd_view& up, const specd_view& y);
//     void add(const specd_view& a, const specd_view& b, const specd_view& y);
//     void copy_rows(const specd_view& src, const specd_view& indices, const specd_view& dst);
//     // ABI 0.5, needed by the host's models (their KV caches are paged):
//     void attention_paged(const specd_view& q, const specd_view& k_pool,
//                          const specd_view& v_pool, const specd_attention_mask& mask,
//                          const specd_kv_pages& pages, const specd_attention_params& p,
//                          const specd_view& out);
//     void set_rows(const specd_view& src, const specd_view& indices, const specd_view& dst);
//     // optional:
//     specd_buffer* wrap_host(const void* data, uint64_t size);
//     specd_buffer* wrap_weights(const void* data, uint64_t size, specd_dtype dtype,
//                                int64_t rows, int64_t cols, bool& copied);  // ABI 0.4
//   };
//   SPECD_BACKEND_PLUGIN(MyDevice, "com.example.backend.mine", "mine", "1.0.0", "what it is",
//                        SPECD_BACKEND_HOST_MEMORY)
//
// Methods throw (specd::sdk::PluginError or any std::exception); the macro's adapters turn
// exceptions into statuses made with the host table the device was opened with. Optional
// methods that the class does not define leave their vtable slot NULL.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "specd/backend.h"
#include "specd/cpp/ggml_blocks.hpp"
#include "specd/cpp/host.hpp"
#include "specd/cpp/plugin.hpp"
#include "specd/entry.h"

namespace specd::sdk {

// Bytes of one row of `cols` elements of `dtype`, or 0 for an unknown dtype or a quantized
// row that is not a whole number of blocks (block layouts: ggml_blocks.hpp).
inline uint64_t dtype_row_bytes(specd_dtype dtype, int64_t cols) {
  if (dtype == SPECD_DTYPE_I32) return static_cast<uint64_t>(cols) * 4;
  return ggml::row_bytes(dtype, cols);
}

inline const char* dtype_name(specd_dtype dtype) {
  return dtype == SPECD_DTYPE_I32 ? "i32" : ggml::type_name(dtype);
}

// A packed view (row_stride = row size) of `rows` x `cols` at `offset`.
inline specd_view make_view(specd_buffer* buffer, specd_dtype dtype, uint64_t offset, int64_t rows,
                            int64_t cols) {
  specd_view v{};
  v.struct_size = sizeof(specd_view);
  v.dtype = dtype;
  v.buffer = buffer;
  v.offset = offset;
  v.rows = rows;
  v.cols = cols;
  v.row_stride = static_cast<int64_t>(dtype_row_bytes(dtype, cols));
  return v;
}

// The checks of a view an op receives that do not depend on how the backend keeps its
// buffers: the view is present and large enough (struct_size), has a buffer, a dtype among
// `dtypes` (else SPECD_STATUS_UNSUPPORTED), rows >= 0 and cols >= 1, a row stride that holds
// one row, and lies inside the `buffer_size(v->buffer)` bytes of its buffer. Anything else
// throws PluginError(SPECD_STATUS_INVALID_ARGUMENT) reading "<op>: <arg>: ...". Returns the
// bytes of one row. Pure; [any thread].
template <class BufferSize>
uint64_t check_view_extent(const specd_view* v, const char* op, const char* arg,
                           std::initializer_list<specd_dtype> dtypes, BufferSize buffer_size) {
  const std::string where = std::string(op) + ": " + arg + ": ";
  if (!v) throw invalid_argument(where + "missing view");
  if (v->struct_size < sizeof(specd_view)) throw invalid_argument(where + "struct_size too small");
  if (!v->buffer) throw invalid_argument(where + "null buffer");
  bool ok = false;
  std::string allowed;
  for (specd_dtype d : dtypes) {
    ok = ok || d == v->dtype;
    allowed += std::string(allowed.empty() ? "" : "/") + dtype_name(d);
  }
  if (!ok)
    throw PluginError(SPECD_STATUS_UNSUPPORTED, where + "dtype " + dtype_name(v->dtype) + " (" +
                                                    std::to_string(v->dtype) +
                                                    ") not supported, expected " + allowed);
  if (v->rows < 0 || v->cols < 1) throw invalid_argument(where + "bad shape");
  const uint64_t row_bytes = dtype_row_bytes(v->dtype, v->cols);
  if (row_bytes == 0)
    throw invalid_argument(where + "cols " + std::to_string(v->cols) +
                           " is not a multiple of the " + dtype_name(v->dtype) + " block size " +
                           std::to_string(ggml::block_layout(v->dtype).elements));
  if (v->row_stride < static_cast<int64_t>(row_bytes))
    throw invalid_argument(where + "row_stride " + std::to_string(v->row_stride) + " < row size " +
                           std::to_string(row_bytes));
  const uint64_t size = buffer_size(v->buffer);
  const uint64_t extent =
      v->rows == 0 ? 0 : static_cast<uint64_t>(v->rows - 1) * v->row_stride + row_bytes;
  if (v->offset > size || extent > size - v->offset)
    throw invalid_argument(where + "view [" + std::to_string(v->rows) + ", " +
                           std::to_string(v->cols) + "] at offset " + std::to_string(v->offset) +
                           " exceeds its buffer of " + std::to_string(size) + " bytes");
  return row_bytes;
}

// Throws "<op>: <b_name> is [r, c] but <a_name> is [r, c]" unless `a` and `b` (views, or a
// backend's own matrix type: anything with rows and cols) have the same shape. [any thread]
template <class A, class B>
void check_same_shape(const A& a, const B& b, const char* op, const char* a_name,
                      const char* b_name) {
  if (a.rows != b.rows || a.cols != b.cols)
    throw invalid_argument(std::string(op) + ": " + b_name + " is [" + std::to_string(b.rows) +
                           ", " + std::to_string(b.cols) + "] but " + a_name + " is [" +
                           std::to_string(a.rows) + ", " + std::to_string(a.cols) + "]");
}

// Throws unless bytes [offset, offset + size) lie inside a buffer of `buffer_size` bytes
// (uploads, downloads, copies). [any thread]
inline void check_range(const char* op, uint64_t offset, uint64_t size, uint64_t buffer_size) {
  if (offset > buffer_size || size > buffer_size - offset)
    throw invalid_argument(std::string(op) + ": range [" + std::to_string(offset) + ", +" +
                           std::to_string(size) + ") outside a buffer of " +
                           std::to_string(buffer_size) + " bytes");
}

// The shape rules of `matmul` (backend.h) for a backend's matrix type M: x [m, k],
// w [n, k], y [m, n]. Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_matmul_shapes(const M& x, const M& w, const M& y) {
  if (w.cols != x.cols)
    throw invalid_argument("matmul: x has k = " + std::to_string(x.cols) +
                           " but w has k = " + std::to_string(w.cols));
  if (y.rows != x.rows || y.cols != w.rows)
    throw invalid_argument("matmul: y is [" + std::to_string(y.rows) + ", " +
                           std::to_string(y.cols) + "], expected [" + std::to_string(x.rows) +
                           ", " + std::to_string(w.rows) + "]");
}

// The shape rules of `get_rows`: ids [1, m] for y [m, d], table [rows, d]. [any thread]
template <class M>
void check_get_rows_shapes(const M& table, const M& ids, const M& y) {
  if (ids.rows != 1 || ids.cols != y.rows)
    throw invalid_argument("get_rows: ids must be [1, m] for y [m, d]");
  if (y.cols != table.cols) throw invalid_argument("get_rows: y and table differ in cols");
}

// The shape rules of `copy_rows`: src and dst of one dtype and width, indices [1, m] for
// dst [m, n]. [any thread]
template <class M>
void check_copy_rows_shapes(const M& src, const M& indices, const M& dst) {
  if (src.dtype != dst.dtype || src.cols != dst.cols)
    throw invalid_argument("copy_rows: src and dst differ in dtype or cols");
  if (indices.rows != 1 || indices.cols != dst.rows)
    throw invalid_argument("copy_rows: indices must be [1, m] for dst [m, n]");
}

// Row indices read on the host: each of ids[0, n) must be in [0, rows). Throws
// "<op>: <what> <id> at <i> outside [0, <rows>)". [any thread]
inline void check_row_ids(const char* op, const char* what, const int32_t* ids, int64_t n,
                          int64_t rows) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= rows)
      throw invalid_argument(std::string(op) + ": " + what + " " + std::to_string(ids[i]) + " at " +
                             std::to_string(i) + " outside [0, " + std::to_string(rows) + ")");
}

// The ABI 0.2 fields of `rope` params (backend.h), or their 0.1 meaning (normal mode, no
// scaling, no factors) when struct_size ends before them. Pure; [any thread].
struct RopeOptions {
  uint32_t mode = SPECD_ROPE_NORMAL;
  float freq_scale = 1.0f;
  const specd_view* freq_factors = nullptr;  // borrowed from the params
};
inline RopeOptions rope_options(const specd_rope_params& p) {
  RopeOptions o;
  if (p.struct_size >= offsetof(specd_rope_params, freq_factors) + sizeof(p.freq_factors)) {
    o.mode = p.mode;
    o.freq_scale = p.freq_scale == 0.0f ? 1.0f : p.freq_scale;  // 0: no scaling
    o.freq_factors = p.freq_factors;
  }
  return o;
}

// The shape rules of `rope` (backend.h), for a backend's own matrix type M (anything with
// rows and cols): the params' size, even head_dim and n_rot <= min(head_dim, 1024), x of
// n_head * head_dim columns, positions [1, m]. Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_rope_shapes(const M& x, const M& positions, const specd_rope_params& p) {
  auto fail = [](const std::string& what) { throw invalid_argument("rope: " + what); };
  if (p.struct_size < offsetof(specd_rope_params, mode)) fail("params struct_size too small");
  const RopeOptions o = rope_options(p);
  if (o.mode != SPECD_ROPE_NORMAL && o.mode != SPECD_ROPE_NEOX)
    fail("mode " + std::to_string(o.mode) + " is neither SPECD_ROPE_NORMAL nor SPECD_ROPE_NEOX");
  if (!(o.freq_scale > 0.0f) || o.freq_scale > 3.0e38f)
    fail("freq_scale " + std::to_string(o.freq_scale) + " must be 0 (none) or finite and > 0");
  if (p.head_dim == 0 || p.head_dim % 2 || p.n_rot % 2 || p.n_rot > p.head_dim || p.n_rot > 1024)
    fail("need even head_dim and even n_rot <= min(head_dim, 1024)");
  const int64_t cols = static_cast<int64_t>(p.n_head) * p.head_dim;
  if (cols != x.cols)
    fail("x has " + std::to_string(x.cols) +
         " cols, expected n_head * head_dim = " + std::to_string(cols));
  if (positions.rows != 1 || positions.cols != x.rows) fail("positions must be [1, m]");
}

// The shape rule of `rope`'s freq_factors (the backend's checked view of
// rope_options(p).freq_factors): f32 [1, n_rot / 2]. Their values (> 0) are the caller's
// to guarantee: they may live in device memory. Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_rope_factors_shape(const M& factors, const specd_rope_params& p) {
  if (factors.rows != 1 || factors.cols != static_cast<int64_t>(p.n_rot / 2))
    throw invalid_argument("rope: freq_factors is [" + std::to_string(factors.rows) + ", " +
                           std::to_string(factors.cols) +
                           "], expected [1, n_rot / 2 = " + std::to_string(p.n_rot / 2) + "]");
}

// The shape rules of `add`: y and a [m, n]; b [m, n] or, since ABI 0.2, one row [1, n]
// added to every row (a bias). Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_add_shapes(const M& a, const M& b, const M& y) {
  check_same_shape(a, y, "add", "a", "y");
  if (b.rows == 1 && b.cols == a.cols) return;
  check_same_shape(a, b, "add", "a", "b");
}

// The shape rules of `attention` (backend.h) for a backend's matrix type M: the params
// (n_head a positive multiple of n_head_kv, head_dim > 0), q and out [m, n_head * head_dim],
// the caches [capacity, n_head_kv * head_dim], mask.prefix_len [1, m] and mask.extra_begin
// [1, m + 1]. The mask's values are the backend's to check (they may be in device memory).
// Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_attention_shapes(const M& q, const M& k, const M& v, const M& out, const M& prefix_len,
                            const M& extra_begin, const specd_attention_params& p) {
  auto fail = [](const std::string& what) { throw invalid_argument("attention: " + what); };
  if (p.struct_size < sizeof(specd_attention_params)) fail("params struct_size too small");
  if (p.n_head == 0 || p.n_head_kv == 0 || p.n_head % p.n_head_kv || p.head_dim == 0)
    fail("need n_head a positive multiple of n_head_kv and head_dim > 0");
  if (q.cols != static_cast<int64_t>(p.n_head) * p.head_dim) fail("q cols != n_head * head_dim");
  if (k.cols != static_cast<int64_t>(p.n_head_kv) * p.head_dim || v.cols != k.cols ||
      v.rows != k.rows)
    fail("k_cache/v_cache must be [capacity, n_head_kv * head_dim]");
  check_same_shape(q, out, "attention", "q", "out");
  if (prefix_len.rows != 1 || prefix_len.cols != q.rows) fail("mask.prefix_len must be [1, m]");
  if (extra_begin.rows != 1 || extra_begin.cols != q.rows + 1)
    fail("mask.extra_begin must be [1, m + 1]");
}

// The shape rules of `attention_paged` (backend.h): attention's, with the pools in place of
// the caches, and pages.block_table [1, n] and pages.table_begin [1, m] int32 views checked
// by the caller into `table` and `table_begin`. Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_attention_paged_shapes(const M& q, const M& k, const M& v, const M& out,
                                  const M& prefix_len, const M& extra_begin, const M& table,
                                  const M& table_begin, const specd_kv_pages& pages,
                                  const specd_attention_params& p) {
  auto fail = [](const std::string& what) { throw invalid_argument("attention_paged: " + what); };
  if (pages.struct_size < sizeof(specd_kv_pages)) fail("pages struct_size too small");
  if (pages.block_rows == 0) fail("pages.block_rows must be at least 1");
  if (k.rows % pages.block_rows != 0)
    fail("the pools' " + std::to_string(k.rows) + " rows are not whole blocks of " +
         std::to_string(pages.block_rows));
  check_attention_shapes(q, k, v, out, prefix_len, extra_begin, p);
  if (table.rows != 1 || table.cols < 1) fail("pages.block_table must be [1, n], n >= 1");
  if (table_begin.rows != 1 || table_begin.cols != q.rows) fail("pages.table_begin must be [1, m]");
}

// The rules of an attention mask's values (backend.h, specd_attention_mask), for backends
// whose index views are host memory: extra_begin starts at 0 and never decreases, every row
// attends at least one key, a row's extra slots increase from its prefix_len on, and every
// slot is below limit(i), the logical rows row i may address (attention: the capacity;
// attention_paged: what its table covers). `extra` holds n_extra entries (may be null when
// extra_begin[m] is 0). Throws INVALID_ARGUMENT naming `op`. [any thread]
template <class Limit>
void check_attention_mask(const char* op, int64_t m, const int32_t* prefix, const int32_t* begin,
                          const int32_t* extra, int64_t n_extra, Limit&& limit) {
  auto fail = [&](const std::string& what) {
    throw invalid_argument(std::string(op) + ": " + what);
  };
  if (begin[0] != 0) fail("mask.extra_begin[0] must be 0");
  if (begin[m] > n_extra) fail("mask.extra_slots shorter than extra_begin[m]");
  for (int64_t i = 0; i < m; ++i) {
    const int64_t cap = limit(i);
    if (prefix[i] < 0 || prefix[i] > cap)
      fail("mask.prefix_len out of range at row " + std::to_string(i));
    if (begin[i + 1] < begin[i]) fail("mask.extra_begin not increasing");
    if (prefix[i] + begin[i + 1] - begin[i] == 0)
      fail("row " + std::to_string(i) + " attends no key");
    int64_t last = static_cast<int64_t>(prefix[i]) - 1;
    for (int32_t e = begin[i]; e < begin[i + 1]; ++e) {
      if (extra[e] <= last || extra[e] >= cap)
        fail("mask.extra_slots of row " + std::to_string(i) +
             " must increase, start at or after prefix_len and stay below capacity");
      last = extra[e];
    }
  }
}

// The rules of attention_paged's table values, for backends whose index views are host
// memory: every block id in [0, blocks), every table_begin in [0, n]; row i's table then
// covers (n - table_begin[i]) * block_rows logical rows (check_attention_mask's limit).
// Throws INVALID_ARGUMENT. [any thread]
inline void check_kv_pages(const int32_t* table, int64_t n, const int32_t* table_begin, int64_t m,
                           int64_t blocks) {
  for (int64_t b = 0; b < n; ++b)
    if (table[b] < 0 || table[b] >= blocks)
      throw invalid_argument("attention_paged: pages.block_table[" + std::to_string(b) +
                             "] = " + std::to_string(table[b]) + " is outside the pool's " +
                             std::to_string(blocks) + " blocks");
  for (int64_t i = 0; i < m; ++i)
    if (table_begin[i] < 0 || table_begin[i] > n)
      throw invalid_argument("attention_paged: pages.table_begin[" + std::to_string(i) +
                             "] is outside the table");
}

// The shape rules of `set_rows` (backend.h): src [m, n], indices [1, m], dst [rows, n] of
// src's dtype (or f16 / q8_0 for an f32 src: whether the backend converts is its own).
// Throws INVALID_ARGUMENT. [any thread]
template <class M>
void check_set_rows_shapes(const M& src, const M& indices, const M& dst) {
  auto fail = [](const std::string& what) { throw invalid_argument("set_rows: " + what); };
  if (indices.rows != 1 || indices.cols != src.rows) fail("indices must be [1, m]");
  if (src.cols != dst.cols) fail("src and dst differ in columns");
  const bool converts = src.dtype == SPECD_DTYPE_F32 &&
                        (dst.dtype == SPECD_DTYPE_F16 || dst.dtype == SPECD_DTYPE_Q8_0);
  if (src.dtype != dst.dtype && !converts)
    fail(std::string("cannot write ") + dtype_name(src.dtype) + " rows into " +
         dtype_name(dst.dtype) + " rows");
}

// set_rows' index values, for backends whose index views are host memory: each in
// [0, rows), no two equal. Throws INVALID_ARGUMENT. [any thread]
inline void check_scatter_ids(const int32_t* ids, int64_t m, int64_t rows) {
  check_row_ids("set_rows", "index", ids, m, rows);
  std::vector<int32_t> sorted(ids, ids + m);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 1; i < m; ++i)
    if (sorted[i] == sorted[i - 1])
      throw invalid_argument("set_rows: index " + std::to_string(sorted[i]) +
                             " appears twice (rows would be written twice)");
}

namespace detail {

template <class Device>
struct BackendHolder {
  Host host;
  Device device;
  BackendHolder(const specd_host* h, const specd_device_params& p) : host(h), device(host, p) {}
};

template <class Device>
struct BackendAdapter {
  using H = BackendHolder<Device>;
  static H& self(void* d) { return *static_cast<H*>(d); }
  template <class F>
  static specd_status* call(void* d, F&& f) {
    H& h = self(d);
    return guard(h.host.raw(), [&] { f(h.device); });
  }

  static std::string& reason() {
    static std::string r;
    return r;
  }
  static specd_status* score(const specd_host* host, uint32_t* out, const char** why) {
    return guard(host, [&] {
      reason().clear();
      *out = Device::score(Host(host), reason());
      *why = reason().c_str();
    });
  }
  static specd_status* open(const specd_host* host, const specd_device_params* params, void** out) {
    return guard(host, [&] {
      specd_device_params p{};
      p.struct_size = sizeof(p);
      if (params) {
        p.device_index = params->device_index;
        p.threads = params->threads;
      }
      *out = new H(host, p);
    });
  }
  static void close(void* d) { delete static_cast<H*>(d); }
  static specd_status* info(void* d, specd_device_info* out) {
    return call(d, [&](Device& dev) {
      specd_device_info full{};
      full.struct_size = sizeof(full);
      dev.info(full);
      const uint32_t n = out->struct_size < sizeof(full) ? out->struct_size : sizeof(full);
      const uint32_t size = out->struct_size;
      std::memcpy(out, &full, n);
      out->struct_size = size;
    });
  }
  static specd_status* synchronize(void* d) {
    return call(d, [&](Device& dev) { dev.synchronize(); });
  }
  static specd_status* alloc(void* d, uint64_t size, specd_buffer** out) {
    return call(d, [&](Device& dev) { *out = dev.alloc(size); });
  }
  static void free(void* d, specd_buffer* b) {
    if (b) self(d).device.free(b);
  }
  static specd_status* upload(void* d, specd_buffer* dst, uint64_t off, const void* src,
                              uint64_t size) {
    return call(d, [&](Device& dev) { dev.upload(dst, off, src, size); });
  }
  static specd_status* download(void* d, const specd_buffer* src, uint64_t off, void* dst,
                                uint64_t size) {
    return call(d, [&](Device& dev) { dev.download(src, off, dst, size); });
  }
  static specd_status* copy(void* d, specd_buffer* dst, uint64_t doff, const specd_buffer* src,
                            uint64_t soff, uint64_t size) {
    return call(d, [&](Device& dev) { dev.copy(dst, doff, src, soff, size); });
  }
  static constexpr bool has_wrap_host = requires(Device & dev, const void* p, uint64_t n) {
    dev.wrap_host(p, n);
  };
  static specd_status* wrap_host(void* d, const void* data, uint64_t size, specd_buffer** out) {
    if constexpr (has_wrap_host) {
      return call(d, [&](Device& dev) { *out = dev.wrap_host(data, size); });
    } else {
      return nullptr;
    }
  }
  static constexpr bool has_wrap_weights =
      requires(Device & dev, const void* p, uint64_t n, specd_dtype t, int64_t r, bool& c) {
    dev.wrap_weights(p, n, t, r, r, c);
  };
  static specd_status* wrap_weights(void* d, const void* data, uint64_t size, specd_dtype dtype,
                                    int64_t rows, int64_t cols, specd_buffer** out,
                                    int32_t* out_copied) {
    if constexpr (has_wrap_weights) {
      return call(d, [&](Device& dev) {
        bool copied = false;
        *out = dev.wrap_weights(data, size, dtype, rows, cols, copied);
        *out_copied = copied ? 1 : 0;
      });
    } else {
      return nullptr;
    }
  }
  static specd_status* matmul(void* d, const specd_view* x, const specd_view* w,
                              const specd_view* y) {
    return call(d, [&](Device& dev) { dev.matmul(*x, *w, *y); });
  }
  static specd_status* rms_norm(void* d, const specd_view* x, const specd_view* w, float eps,
                                const specd_view* y) {
    return call(d, [&](Device& dev) { dev.rms_norm(*x, *w, eps, *y); });
  }
  static specd_status* rope(void* d, const specd_view* x, const specd_view* pos,
                            const specd_rope_params* p) {
    return call(d, [&](Device& dev) { dev.rope(*x, *pos, *p); });
  }
  static specd_status* get_rows(void* d, const specd_view* t, const specd_view* ids,
                                const specd_view* y) {
    return call(d, [&](Device& dev) { dev.get_rows(*t, *ids, *y); });
  }
  static specd_status* attention(void* d, const specd_view* q, const specd_view* k,
                                 const specd_view* v, const specd_attention_mask* mask,
                                 const specd_attention_params* p, const specd_view* out) {
    return call(d, [&](Device& dev) { dev.attention(*q, *k, *v, *mask, *p, *out); });
  }
  static specd_status* swiglu(void* d, const specd_view* g, const specd_view* u,
                              const specd_view* y) {
    return call(d, [&](Device& dev) { dev.swiglu(*g, *u, *y); });
  }
  static specd_status* add(void* d, const specd_view* a, const specd_view* b, const specd_view* y) {
    return call(d, [&](Device& dev) { dev.add(*a, *b, *y); });
  }
  static specd_status* copy_rows(void* d, const specd_view* src, const specd_view* idx,
                                 const specd_view* dst) {
    return call(d, [&](Device& dev) { dev.copy_rows(*src, *idx, *dst); });
  }
  static constexpr bool has_attention_paged =
      requires(Device & dev, const specd_view& v, const specd_attention_mask& mk,
               const specd_kv_pages& pg, const specd_attention_params& p) {
    dev.attention_paged(v, v, v, mk, pg, p, v);
  };
  static specd_status* attention_paged(void* d, const specd_view* q, const specd_view* k,
                                       const specd_view* v, const specd_attention_mask* mask,
                                       const specd_kv_pages* pages, const specd_attention_params* p,
                                       const specd_view* out) {
    if constexpr (has_attention_paged) {
      return call(d,
                  [&](Device& dev) { dev.attention_paged(*q, *k, *v, *mask, *pages, *p, *out); });
    } else {
      return nullptr;
    }
  }
  static constexpr bool has_set_rows = requires(Device & dev, const specd_view& v) {
    dev.set_rows(v, v, v);
  };
  static specd_status* set_rows(void* d, const specd_view* src, const specd_view* idx,
                                const specd_view* dst) {
    if constexpr (has_set_rows) {
      return call(d, [&](Device& dev) { dev.set_rows(*src, *idx, *dst); });
    } else {
      return nullptr;
    }
  }

  static specd_backend_vtable make_vtable(uint64_t flags) {
    specd_backend_vtable vt{};
    vt.struct_size = sizeof(vt);
    vt.flags = flags;
    vt.score = &score;
    vt.device_open = &open;
    vt.device_close = &close;
    vt.device_info = &info;
    vt.synchronize = &synchronize;
    vt.buffer_alloc = &alloc;
    vt.buffer_free = &free;
    vt.buffer_upload = &upload;
    vt.buffer_download = &download;
    vt.buffer_copy = &copy;
    vt.buffer_wrap_host = has_wrap_host ? &wrap_host : nullptr;
    vt.matmul = &matmul;
    vt.rms_norm = &rms_norm;
    vt.rope = &rope;
    vt.get_rows = &get_rows;
    vt.attention = &attention;
    vt.swiglu = &swiglu;
    vt.add = &add;
    vt.copy_rows = &copy_rows;
    vt.buffer_wrap_weights = has_wrap_weights ? &wrap_weights : nullptr;
    vt.attention_paged = has_attention_paged ? &attention_paged : nullptr;
    vt.set_rows = has_set_rows ? &set_rows : nullptr;
    return vt;
  }
};

}  // namespace detail
}  // namespace specd::sdk

// Defines the backend vtable, the descriptor and the one exported entry point.
#define SPECD_BACKEND_PLUGIN(CLASS, ID, NAME, VERSION, DESCRIPTION, FLAGS)      \
  namespace {                                                                   \
  const specd_backend_vtable specd_sdk_backend_vtable =                         \
      specd::sdk::detail::BackendAdapter<CLASS>::make_vtable(FLAGS);            \
  }                                                                             \
  SPECD_DEFINE_PLUGIN_ENTRY(SPECD_KIND_BACKEND, ID, NAME, VERSION, DESCRIPTION, \
                            &specd_sdk_backend_vtable)
