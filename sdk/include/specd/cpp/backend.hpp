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
//     // ABI 0.7, needed by hybrid models (gated DeltaNet layers, gated attention):
//     void gated_delta_net(const specd_view& qkv, const specd_view& alpha,
//                          const specd_view& beta, const specd_view& conv_weight,
//                          const specd_view& dt_bias, const specd_view& a,
//                          const specd_view& conv_states, const specd_view& ssm_states,
//                          const specd_view& state_in, const specd_view& state_out,
//                          const specd_delta_net_params& p, const specd_view& out);
//     void mul_sigmoid(const specd_view& x, const specd_view& gate, const specd_view& y);
//     // ABI 0.8, needed by gpt-oss (its clamped SwiGLU):
//     void swiglu_oai(const specd_view& gate, const specd_view& up, float alpha, float limit,
//                     const specd_view& y);
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
// methods that the class does not define leave their vtable slot NULL. Before an op's method
// runs, the adapter checks the op's contract (op_contract.hpp: shapes, parameters, dtype
// relations); the method checks its views against its buffers (check_view_extent) and the
// index values in its memory.
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
#include "specd/cpp/op_contract.hpp"
#include "specd/cpp/plugin.hpp"
#include "specd/entry.h"

namespace specd::sdk {

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
// bytes of one row. Pure; [any thread]. It runs on every op call, so messages are built only
// when a check fails.
template <class BufferSize>
uint64_t check_view_extent(const specd_view* v, const char* op, const char* arg,
                           std::initializer_list<specd_dtype> dtypes, BufferSize buffer_size) {
  const auto where = [&] { return std::string(op) + ": " + arg + ": "; };
  if (!v) throw invalid_argument(where() + "missing view");
  if (v->struct_size < sizeof(specd_view))
    throw invalid_argument(where() + "struct_size too small");
  if (!v->buffer) throw invalid_argument(where() + "null buffer");
  if (std::find(dtypes.begin(), dtypes.end(), v->dtype) == dtypes.end()) {
    std::string allowed;
    for (specd_dtype d : dtypes) allowed += std::string(allowed.empty() ? "" : "/") + dtype_name(d);
    throw PluginError(SPECD_STATUS_UNSUPPORTED, where() + "dtype " + dtype_name(v->dtype) + " (" +
                                                    std::to_string(v->dtype) +
                                                    ") not supported, expected " + allowed);
  }
  if (v->rows < 0 || v->cols < 1) throw invalid_argument(where() + "bad shape");
  const uint64_t row_bytes = dtype_row_bytes(v->dtype, v->cols);
  if (row_bytes == 0)
    throw invalid_argument(where() + "cols " + std::to_string(v->cols) +
                           " is not a multiple of the " + dtype_name(v->dtype) + " block size " +
                           std::to_string(ggml::block_layout(v->dtype).elements));
  if (v->row_stride < static_cast<int64_t>(row_bytes))
    throw invalid_argument(where() + "row_stride " + std::to_string(v->row_stride) +
                           " < row size " + std::to_string(row_bytes));
  const uint64_t size = buffer_size(v->buffer);
  const uint64_t extent =
      v->rows == 0 ? 0 : static_cast<uint64_t>(v->rows - 1) * v->row_stride + row_bytes;
  if (v->offset > size || extent > size - v->offset)
    throw invalid_argument(where() + "view [" + std::to_string(v->rows) + ", " +
                           std::to_string(v->cols) + "] at offset " + std::to_string(v->offset) +
                           " exceeds its buffer of " + std::to_string(size) + " bytes");
  return row_bytes;
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
    return call(d, [&](Device& dev) {
      contract::matmul(x, w, y);
      dev.matmul(*x, *w, *y);
    });
  }
  static specd_status* rms_norm(void* d, const specd_view* x, const specd_view* w, float eps,
                                const specd_view* y) {
    return call(d, [&](Device& dev) {
      contract::rms_norm(x, w, eps, y);
      dev.rms_norm(*x, *w, eps, *y);
    });
  }
  static specd_status* rope(void* d, const specd_view* x, const specd_view* pos,
                            const specd_rope_params* p) {
    return call(d, [&](Device& dev) {
      contract::rope(x, pos, p);
      dev.rope(*x, *pos, *p);
    });
  }
  static specd_status* get_rows(void* d, const specd_view* t, const specd_view* ids,
                                const specd_view* y) {
    return call(d, [&](Device& dev) {
      contract::get_rows(t, ids, y);
      dev.get_rows(*t, *ids, *y);
    });
  }
  static specd_status* attention(void* d, const specd_view* q, const specd_view* k,
                                 const specd_view* v, const specd_attention_mask* mask,
                                 const specd_attention_params* p, const specd_view* out) {
    return call(d, [&](Device& dev) {
      contract::attention(q, k, v, mask, p, out);
      dev.attention(*q, *k, *v, *mask, *p, *out);
    });
  }
  static specd_status* swiglu(void* d, const specd_view* g, const specd_view* u,
                              const specd_view* y) {
    return call(d, [&](Device& dev) {
      contract::swiglu(g, u, y);
      dev.swiglu(*g, *u, *y);
    });
  }
  static specd_status* add(void* d, const specd_view* a, const specd_view* b, const specd_view* y) {
    return call(d, [&](Device& dev) {
      contract::add(a, b, y);
      dev.add(*a, *b, *y);
    });
  }
  static specd_status* copy_rows(void* d, const specd_view* src, const specd_view* idx,
                                 const specd_view* dst) {
    return call(d, [&](Device& dev) {
      contract::copy_rows(src, idx, dst);
      dev.copy_rows(*src, *idx, *dst);
    });
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
      return call(d, [&](Device& dev) {
        contract::attention_paged(q, k, v, mask, pages, p, out);
        dev.attention_paged(*q, *k, *v, *mask, *pages, *p, *out);
      });
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
      return call(d, [&](Device& dev) {
        contract::set_rows(src, idx, dst);
        dev.set_rows(*src, *idx, *dst);
      });
    } else {
      return nullptr;
    }
  }

  static constexpr bool has_gated_delta_net =
      requires(Device & dev, const specd_view& v, const specd_delta_net_params& p) {
    dev.gated_delta_net(v, v, v, v, v, v, v, v, v, v, p, v);
  };
  static specd_status* gated_delta_net(void* d, const specd_view* qkv, const specd_view* alpha,
                                       const specd_view* beta, const specd_view* conv_weight,
                                       const specd_view* dt_bias, const specd_view* a,
                                       const specd_view* conv_states, const specd_view* ssm_states,
                                       const specd_recurrent_rows* rows,
                                       const specd_delta_net_params* p, const specd_view* out) {
    if constexpr (has_gated_delta_net) {
      return call(d, [&](Device& dev) {
        contract::gated_delta_net(qkv, alpha, beta, conv_weight, dt_bias, a, conv_states,
                                  ssm_states, rows, p, out);
        dev.gated_delta_net(*qkv, *alpha, *beta, *conv_weight, *dt_bias, *a, *conv_states,
                            *ssm_states, *rows->state_in, *rows->state_out, *p, *out);
      });
    } else {
      return nullptr;
    }
  }
  static constexpr bool has_mul_sigmoid = requires(Device & dev, const specd_view& v) {
    dev.mul_sigmoid(v, v, v);
  };
  static specd_status* mul_sigmoid(void* d, const specd_view* x, const specd_view* gate,
                                   const specd_view* y) {
    if constexpr (has_mul_sigmoid) {
      return call(d, [&](Device& dev) {
        contract::mul_sigmoid(x, gate, y);
        dev.mul_sigmoid(*x, *gate, *y);
      });
    } else {
      return nullptr;
    }
  }
  static constexpr bool has_swiglu_oai = requires(Device & dev, const specd_view& v, float f) {
    dev.swiglu_oai(v, v, f, f, v);
  };
  static specd_status* swiglu_oai(void* d, const specd_view* gate, const specd_view* up,
                                  float alpha, float limit, const specd_view* y) {
    if constexpr (has_swiglu_oai) {
      return call(d, [&](Device& dev) {
        contract::swiglu_oai(gate, up, alpha, limit, y);
        dev.swiglu_oai(*gate, *up, alpha, limit, *y);
      });
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
    vt.gated_delta_net = has_gated_delta_net ? &gated_delta_net : nullptr;
    vt.mul_sigmoid = has_mul_sigmoid ? &mul_sigmoid : nullptr;
    vt.swiglu_oai = has_swiglu_oai ? &swiglu_oai : nullptr;
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
