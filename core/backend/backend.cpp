#include "backend/backend.hpp"

#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "plugin/host_services.hpp"

namespace specd {

View View::slice_rows(int64_t first, int64_t count) const {
  if (first < 0 || count < 0 || first + count > v_.rows)
    throw Error("view rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
                ") outside [0, " + std::to_string(v_.rows) + ")");
  specd_view v = v_;
  v.offset += static_cast<uint64_t>(first * v_.row_stride);
  v.rows = count;
  return View(v);
}

View View::slice_cols(int64_t first, int64_t count) const {
  if (v_.rows != 1 || v_.dtype != SPECD_DTYPE_I32)
    throw Error("slice_cols: only one-row int32 views are sliced by columns");
  if (first < 0 || count < 0 || first + count > v_.cols)
    throw Error("view columns [" + std::to_string(first) + ", " + std::to_string(first + count) +
                ") outside [0, " + std::to_string(v_.cols) + ")");
  specd_view v = v_;
  v.offset += static_cast<uint64_t>(first) * 4;
  v.cols = count;
  v.row_stride = count * 4;
  return View(v);
}

// ---- Buffer ----------------------------------------------------------------------------

Buffer::~Buffer() {
  reset();
}

Buffer::Buffer(Buffer&& o) noexcept
    : device_(std::exchange(o.device_, nullptr)),
      buffer_(std::exchange(o.buffer_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = std::exchange(o.device_, nullptr);
    buffer_ = std::exchange(o.buffer_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void Buffer::reset() {
  if (buffer_) device_->vt().buffer_free(device_->handle_, buffer_);
  buffer_ = nullptr;
  size_ = 0;
}

View Buffer::view(specd_dtype dtype, int64_t rows, int64_t cols, uint64_t offset,
                  int64_t row_stride) const {
  specd_view v{};
  v.struct_size = sizeof(v);
  v.dtype = dtype;
  v.buffer = buffer_;
  v.offset = offset;
  v.rows = rows;
  v.cols = cols;
  v.row_stride = row_stride ? row_stride : static_cast<int64_t>(dtype_row_bytes(dtype, cols));
  return View(v);
}

void Buffer::upload(const void* src, uint64_t size, uint64_t offset) {
  device_->backend_->check(
      device_->vt().buffer_upload(device_->handle_, buffer_, offset, src, size), nullptr);
}

void Buffer::download(void* dst, uint64_t size, uint64_t offset) const {
  device_->backend_->check(
      device_->vt().buffer_download(device_->handle_, buffer_, offset, dst, size), nullptr);
}

// ---- Backend ---------------------------------------------------------------------------

Backend::Backend(const LoadedPlugin& plugin) : plugin_(&plugin) {
  if (plugin.kind != SPECD_KIND_BACKEND || !plugin.vtable)
    throw Error("plugin '" + plugin.id + "' (" + plugin.path + ") is not a backend");
  vt_ = static_cast<const specd_backend_vtable*>(plugin.vtable);
  if (!SPECD_BACKEND_HAS(vt_, copy_rows) || !vt_->score || !vt_->device_open ||
      !vt_->device_close || !vt_->buffer_alloc || !vt_->buffer_free || !vt_->buffer_upload ||
      !vt_->buffer_download || !vt_->buffer_copy || !vt_->matmul || !vt_->rms_norm || !vt_->rope ||
      !vt_->get_rows || !vt_->attention || !vt_->swiglu || !vt_->add || !vt_->copy_rows ||
      !vt_->device_info || !vt_->synchronize)
    throw Error(label() + " (" + plugin.path + "): incomplete backend vtable");
}

std::string Backend::label() const {
  return "backend '" + plugin_->name + "' (" + plugin_->id + ")";
}

void Backend::check(specd_status* status, const char* what) const {
  if (status) throw_if_error(status, what && *what ? label() + ": " + what : label());
}

void Backend::require_minor(uint32_t needed, const std::string& feature) const {
  if (abi_minor() >= needed) return;
  throw UsageError(label() + " implements ABI " + std::to_string(plugin_->abi_major) + "." +
                   std::to_string(abi_minor()) + "; " + feature + " needs ABI " +
                   std::to_string(SPECD_ABI_VERSION_MAJOR) + "." + std::to_string(needed) +
                   " (rebuild the plugin against this SDK)");
}

uint32_t Backend::score(std::string* reason) const {
  uint32_t s = 0;
  const char* why = nullptr;
  check(vt_->score(host_table(), &s, &why), "score");
  if (reason) *reason = why ? why : "";
  return s;
}

std::unique_ptr<Device> Backend::open(const DeviceOptions& options) const {
  std::string reason;
  if (score(&reason) == 0)
    throw Error(label() + " cannot run on this machine: " +
                (reason.empty() ? std::string("no reason given") : reason));
  specd_device_params p{};
  p.struct_size = sizeof(p);
  p.device_index = options.device_index;
  p.threads = options.threads;
  void* handle = nullptr;
  check(vt_->device_open(host_table(), &p, &handle), "device_open");
  return std::unique_ptr<Device>(new Device(this, handle));
}

// ---- Device ----------------------------------------------------------------------------

Device::~Device() {
  vt().device_close(handle_);
}

specd_device_info Device::info() const {
  specd_device_info info{};
  info.struct_size = sizeof(info);
  backend_->check(vt().device_info(handle_, &info), "device_info");
  info.name[sizeof(info.name) - 1] = '\0';
  return info;
}

Buffer Device::alloc(uint64_t size) {
  specd_buffer* b = nullptr;
  backend_->check(vt().buffer_alloc(handle_, size, &b), "buffer_alloc");
  return Buffer(this, b, size);
}

bool Device::wraps_host() const {
  return vt().buffer_wrap_host && (backend_->flags() & SPECD_BACKEND_HOST_MEMORY);
}

Buffer Device::wrap_host(const void* data, uint64_t size) {
  if (wraps_host()) {
    specd_buffer* b = nullptr;
    backend_->check(vt().buffer_wrap_host(handle_, data, size, &b), "buffer_wrap_host");
    return Buffer(this, b, size);
  }
  Buffer b = alloc(size);
  b.upload(data, size);
  return b;
}

Buffer Device::wrap_weights(const void* data, uint64_t size, specd_dtype dtype, int64_t rows,
                            int64_t cols, bool& copied) {
  copied = false;
  if (SPECD_BACKEND_HAS(&vt(), buffer_wrap_weights) && vt().buffer_wrap_weights) {
    specd_buffer* b = nullptr;
    int32_t c = 0;
    backend_->check(vt().buffer_wrap_weights(handle_, data, size, dtype, rows, cols, &b, &c),
                    "buffer_wrap_weights");
    copied = c != 0;
    return Buffer(this, b, size);
  }
  copied = !wraps_host();
  return wrap_host(data, size);
}

void Device::synchronize() {
  backend_->check(vt().synchronize(handle_), "synchronize");
}

void Device::matmul(const View& x, const View& w, const View& y) {
  backend_->check(vt().matmul(handle_, x.raw(), w.raw(), y.raw()), nullptr);
}

void Device::rms_norm(const View& x, const View& weight, float eps, const View& y) {
  backend_->check(vt().rms_norm(handle_, x.raw(), weight.raw(), eps, y.raw()), nullptr);
}

void Device::rope(const View& x, const View& positions, const specd_rope_params& params) {
  const sdk::RopeOptions o = sdk::rope_options(params);
  if (o.mode != SPECD_ROPE_NORMAL || o.freq_scale != 1.0f || o.freq_factors)
    backend_->require_minor(2, "rope with neox mode, frequency scaling or factors");
  // Zeroed YaRN fields mean 0.2's rope to every backend; set ones only a 0.8 backend reads.
  if (o.ext_factor != 0.0f || o.attn_factor != 1.0f)
    backend_->require_minor(8, "rope with YaRN (ext_factor or attn_factor)");
  backend_->check(vt().rope(handle_, x.raw(), positions.raw(), &params), nullptr);
}

void Device::get_rows(const View& table, const View& ids, const View& y) {
  backend_->check(vt().get_rows(handle_, table.raw(), ids.raw(), y.raw()), nullptr);
}

namespace {

// A window or sinks only a 0.8 backend reads: an older one would attend every key.
void require_attention_minor(const Backend& backend, const specd_attention_params& params) {
  const sdk::AttentionOptions o = sdk::attention_options(params);
  if (o.window != 0 || o.sinks) backend.require_minor(8, "attention with a window or sinks");
}

}  // namespace

void Device::attention(const View& q, const View& k_cache, const View& v_cache,
                       const View& prefix_len, const View& extra_begin, const View* extra_slots,
                       const specd_attention_params& params, const View& out) {
  require_attention_minor(*backend_, params);
  specd_attention_mask mask{};
  mask.struct_size = sizeof(mask);
  mask.prefix_len = prefix_len.raw();
  mask.extra_begin = extra_begin.raw();
  mask.extra_slots = extra_slots ? extra_slots->raw() : nullptr;
  backend_->check(
      vt().attention(handle_, q.raw(), k_cache.raw(), v_cache.raw(), &mask, &params, out.raw()),
      nullptr);
}

void Device::swiglu(const View& gate, const View& up, const View& y) {
  backend_->check(vt().swiglu(handle_, gate.raw(), up.raw(), y.raw()), nullptr);
}

void Device::add(const View& a, const View& b, const View& y) {
  if (b.rows() == 1 && a.rows() != 1) backend_->require_minor(2, "add with a one-row b (a bias)");
  backend_->check(vt().add(handle_, a.raw(), b.raw(), y.raw()), nullptr);
}

void Device::copy_rows(const View& src, const View& indices, const View& dst) {
  backend_->check(vt().copy_rows(handle_, src.raw(), indices.raw(), dst.raw()), nullptr);
}

void Device::attention_paged(const View& q, const View& k_pool, const View& v_pool,
                             const View& prefix_len, const View& extra_begin,
                             const View* extra_slots, int32_t block_rows, const View& block_table,
                             const View& table_begin, const specd_attention_params& params,
                             const View& out) {
  if (!SPECD_BACKEND_HAS(&vt(), attention_paged) || !vt().attention_paged) {
    backend_->require_minor(5, "attention over a paged KV cache");
    throw UsageError(backend_->label() + ": attention_paged is not implemented (an ABI 0.5 op)");
  }
  require_attention_minor(*backend_, params);
  specd_attention_mask mask{};
  mask.struct_size = sizeof(mask);
  mask.prefix_len = prefix_len.raw();
  mask.extra_begin = extra_begin.raw();
  mask.extra_slots = extra_slots ? extra_slots->raw() : nullptr;
  specd_kv_pages pages{};
  pages.struct_size = sizeof(pages);
  pages.block_rows = static_cast<uint32_t>(block_rows);
  pages.block_table = block_table.raw();
  pages.table_begin = table_begin.raw();
  backend_->check(vt().attention_paged(handle_, q.raw(), k_pool.raw(), v_pool.raw(), &mask, &pages,
                                       &params, out.raw()),
                  nullptr);
}

void Device::set_rows(const View& src, const View& indices, const View& dst) {
  if (!SPECD_BACKEND_HAS(&vt(), set_rows) || !vt().set_rows) {
    backend_->require_minor(5, "writing KV rows into a paged cache (set_rows)");
    throw UsageError(backend_->label() + ": set_rows is not implemented (an ABI 0.5 op)");
  }
  backend_->check(vt().set_rows(handle_, src.raw(), indices.raw(), dst.raw()), nullptr);
}

bool Device::has_hybrid_ops() const {
  return SPECD_BACKEND_HAS(&vt(), mul_sigmoid) && vt().gated_delta_net && vt().mul_sigmoid;
}

void Device::require_hybrid_ops(const std::string& what) const {
  backend_->require_minor(7, what);
  if (!has_hybrid_ops())
    throw UsageError(backend_->label() + " does not implement gated_delta_net and mul_sigmoid " +
                     "(ABI 0.7 ops), which " + what + " needs");
}

void Device::gated_delta_net(const View& qkv, const View& alpha, const View& beta,
                             const View& conv_weight, const View& dt_bias, const View& a,
                             const View& conv_states, const View& ssm_states, const View& state_in,
                             const View& state_out, const specd_delta_net_params& params,
                             const View& out) {
  require_hybrid_ops("a gated DeltaNet layer");
  specd_recurrent_rows rows{};
  rows.struct_size = sizeof(rows);
  rows.state_in = state_in.raw();
  rows.state_out = state_out.raw();
  backend_->check(vt().gated_delta_net(handle_, qkv.raw(), alpha.raw(), beta.raw(),
                                       conv_weight.raw(), dt_bias.raw(), a.raw(), conv_states.raw(),
                                       ssm_states.raw(), &rows, &params, out.raw()),
                  nullptr);
}

void Device::mul_sigmoid(const View& x, const View& gate, const View& y) {
  require_hybrid_ops("a gated attention output");
  backend_->check(vt().mul_sigmoid(handle_, x.raw(), gate.raw(), y.raw()), nullptr);
}

// The minor counts as well as the slot: a plugin built for a later minor is driven as the
// host's, and one driven as a minor below 8 gets no 0.8 call.
bool Device::has_swiglu_oai() const {
  return backend_->abi_minor() >= 8 && SPECD_BACKEND_HAS(&vt(), swiglu_oai) && vt().swiglu_oai;
}

void Device::require_swiglu_oai(const std::string& what) const {
  backend_->require_minor(8, what);
  if (!has_swiglu_oai())
    throw UsageError(backend_->label() + " does not implement swiglu_oai (an ABI 0.8 op), which " +
                     what + " needs");
}

void Device::swiglu_oai(const View& gate, const View& up, float alpha, float limit, const View& y) {
  require_swiglu_oai("gpt-oss's clamped SwiGLU");
  backend_->check(vt().swiglu_oai(handle_, gate.raw(), up.raw(), alpha, limit, y.raw()), nullptr);
}

void Device::copy_bytes(Buffer& dst, uint64_t dst_offset, const Buffer& src, uint64_t src_offset,
                        uint64_t size) {
  backend_->check(vt().buffer_copy(handle_, dst.get(), dst_offset, src.get(), src_offset, size),
                  "buffer_copy");
}

}  // namespace specd
