// Host-side C++ view of a backend plugin (sdk/include/specd/backend.h): Backend (the loaded
// plugin), Device (an open device), Buffer (device memory, RAII) and View (a 2-D window into
// a buffer). Every failed call throws specd::Error (UsageError for invalid arguments) whose
// message starts with "backend '<name>' (<id>): <op>: ".
//
// Lifetimes: the PluginRegistry outlives every Backend, a Backend outlives its Devices, a
// Device outlives its Buffers. Thread rule: as the ABI — a Device and its Buffers are used
// by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "plugin/registry.hpp"
#include "specd/backend.h"
#include "specd/cpp/backend.hpp"

namespace specd {

class Device;

// Rows [0, rows) of `cols` elements of one dtype in a buffer, rows `row_stride` bytes apart.
class View {
 public:
  View() = default;
  explicit View(const specd_view& v) : v_(v) {}
  const specd_view* raw() const { return &v_; }
  specd_dtype dtype() const { return v_.dtype; }
  int64_t rows() const { return v_.rows; }
  int64_t cols() const { return v_.cols; }
  int64_t row_stride() const { return v_.row_stride; }
  bool empty() const { return v_.buffer == nullptr; }  // a default-constructed view
  uint64_t offset() const { return v_.offset; }
  // Rows [first, first + count) of this view.
  View slice_rows(int64_t first, int64_t count) const;
  // Columns [first, first + count) of a one-row int32 view (token ids, positions, indices).
  View slice_cols(int64_t first, int64_t count) const;

 private:
  specd_view v_{};
};

// Bytes of one packed row (0 for an unknown dtype or a q8_0 row not a multiple of 32) and
// dtype names: the SDK's helpers, shared with the plugins.
using sdk::dtype_name;
using sdk::dtype_row_bytes;

class Buffer {
 public:
  Buffer() = default;
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  explicit operator bool() const { return buffer_ != nullptr; }
  specd_buffer* get() const { return buffer_; }
  uint64_t size() const { return size_; }

  // A view at `offset`; row_stride 0 means packed rows.
  View view(specd_dtype dtype, int64_t rows, int64_t cols, uint64_t offset = 0,
            int64_t row_stride = 0) const;
  void upload(const void* src, uint64_t size, uint64_t offset = 0);
  void download(void* dst, uint64_t size, uint64_t offset = 0) const;

 private:
  friend class Device;
  Buffer(Device* device, specd_buffer* buffer, uint64_t size)
      : device_(device), buffer_(buffer), size_(size) {}
  void reset();
  Device* device_ = nullptr;
  specd_buffer* buffer_ = nullptr;
  uint64_t size_ = 0;
};

struct DeviceOptions {
  uint32_t threads = 0;  // 0 = the backend's choice
  uint32_t device_index = 0;
};

class Backend {
 public:
  // Checks that `plugin` is a backend with a complete vtable; throws otherwise.
  explicit Backend(const LoadedPlugin& plugin);

  const std::string& id() const { return plugin_->id; }
  const std::string& name() const { return plugin_->name; }
  const specd_backend_vtable& vtable() const { return *vt_; }
  uint64_t flags() const { return vt_->flags; }
  // The ABI minor the plugin was built against: what it implements of later additions.
  uint32_t abi_minor() const { return plugin_->abi_minor; }
  // Throws UsageError "<label> implements ABI 0.<minor>; <feature> needs ABI 0.<needed>"
  // when the plugin's minor predates `needed`.
  void require_minor(uint32_t needed, const std::string& feature) const;

  // 0 when the backend cannot run here; `reason` (optional) receives why.
  uint32_t score(std::string* reason = nullptr) const;
  // Opens a device; throws naming the reason when the score is 0.
  std::unique_ptr<Device> open(const DeviceOptions& options = {}) const;

  // Throws for a non-NULL status, prefixed with this backend and `what` (may be null: op
  // messages from a backend already name the op).
  void check(specd_status* status, const char* what) const;
  std::string label() const;  // "backend 'cpu' (org.specd.backend.cpu)"

 private:
  const LoadedPlugin* plugin_;
  const specd_backend_vtable* vt_;
};

class Device {
 public:
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const Backend& backend() const { return *backend_; }
  // The plugin's device handle, for calls straight through backend().vtable() (tests of
  // what the ABI boundary does with arguments this class never passes).
  void* handle() const { return handle_; }
  specd_device_info info() const;
  // Whether the device makes backend.h's batch-invariance contract (for info().invariant_max_rows
  // rows).
  bool batch_invariant() const { return info().invariant_max_rows > 0; }

  Buffer alloc(uint64_t size);
  // A read-only buffer over host memory that must outlive it; copies (alloc + upload) when
  // the backend cannot refer to host memory.
  Buffer wrap_host(const void* data, uint64_t size);
  // A buffer holding the weight matrix at `data` (rows x cols of dtype, GGUF layout, `size`
  // bytes): the backend's buffer_wrap_weights when it has one (it may keep its own layout),
  // else wrap_host. `copied` tells whether `data` may be released now (else it must outlive
  // the buffer).
  Buffer wrap_weights(const void* data, uint64_t size, specd_dtype dtype, int64_t rows,
                      int64_t cols, bool& copied);
  void synchronize();

  // Ops (see backend.h for shapes and dtypes). rope's 0.2 fields (neox mode, freq_scale,
  // freq_factors) and add's one-row b throw (require_minor) on a backend of minor < 2, rope's
  // YaRN fields (ext_factor, an attn_factor other than 0 or 1) on one of minor < 8.
  void matmul(const View& x, const View& w, const View& y);
  void rms_norm(const View& x, const View& weight, float eps, const View& y);
  void rope(const View& x, const View& positions, const specd_rope_params& params);
  void get_rows(const View& table, const View& ids, const View& y);
  void attention(const View& q, const View& k_cache, const View& v_cache, const View& prefix_len,
                 const View& extra_begin, const View* extra_slots,
                 const specd_attention_params& params, const View& out);
  void swiglu(const View& gate, const View& up, const View& y);
  void add(const View& a, const View& b, const View& y);
  void copy_rows(const View& src, const View& indices, const View& dst);
  // ABI 0.5 (require_minor(5) otherwise): attention over a paged KV pool, and row scatter.
  void attention_paged(const View& q, const View& k_pool, const View& v_pool,
                       const View& prefix_len, const View& extra_begin, const View* extra_slots,
                       int32_t block_rows, const View& block_table, const View& table_begin,
                       const specd_attention_params& params, const View& out);
  void set_rows(const View& src, const View& indices, const View& dst);
  // ABI 0.7 (hybrid models): a gated DeltaNet layer over recurrent state slots
  // (specd_recurrent_rows: state_in and state_out int32 [1, m]) and a sigmoid-gated product.
  // Both throw UsageError naming the backend when it lacks them.
  void gated_delta_net(const View& qkv, const View& alpha, const View& beta,
                       const View& conv_weight, const View& dt_bias, const View& a,
                       const View& conv_states, const View& ssm_states, const View& state_in,
                       const View& state_out, const specd_delta_net_params& params,
                       const View& out);
  void mul_sigmoid(const View& x, const View& gate, const View& y);
  bool has_hybrid_ops() const;
  // Throws UsageError "<backend> ... needs ABI 0.7" / "does not implement ..., which <what>
  // needs" unless the device has both ABI 0.7 ops.
  void require_hybrid_ops(const std::string& what) const;
  // ABI 0.8 (gpt-oss): the clamped SwiGLU y = g / (1 + exp(-alpha g)) * (u + 1) with
  // g = min(gate, limit), u = clamp(up, -limit, limit); throws UsageError naming the backend
  // when it lacks the op.
  void swiglu_oai(const View& gate, const View& up, float alpha, float limit, const View& y);
  bool has_swiglu_oai() const;
  // Throws UsageError "<backend> ... needs ABI 0.8" / "does not implement swiglu_oai, which
  // <what> needs" unless the device has the op.
  void require_swiglu_oai(const std::string& what) const;
  // Device-side copy of `size` bytes between buffers (ranges may overlap).
  void copy_bytes(Buffer& dst, uint64_t dst_offset, const Buffer& src, uint64_t src_offset,
                  uint64_t size);

 private:
  friend class Backend;
  friend class Buffer;
  Device(const Backend* backend, void* handle) : backend_(backend), handle_(handle) {}
  const specd_backend_vtable& vt() const { return backend_->vtable(); }
  // Whether the backend refers to host memory in place (buffer_wrap_host) rather than copying.
  bool wraps_host() const;
  const Backend* backend_;
  void* handle_;
};

}  // namespace specd
