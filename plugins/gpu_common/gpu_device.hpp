// The GPU device shared by the CUDA and HIP plugins: device memory buffers, one stream, host-side
// argument checks (as the CPU backend's) and kernel dispatch. Vendor differences live in
// vendor.hpp; kernel sources in *.cuh.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "args.hpp"
#include "buffer.hpp"
#include "compat.hpp"
#include "scratch.hpp"
#include "specd/cpp/host.hpp"
#include "vendor.hpp"

namespace specd::gpu {

class GpuDevice {
 public:
  static uint32_t score(sdk::Host host, std::string& reason);
  GpuDevice(sdk::Host host, const specd_device_params& params);
  ~GpuDevice();
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  void info(specd_device_info& info);
  void synchronize();

  specd_buffer* alloc(uint64_t size);
  void free(specd_buffer* buffer);
  void upload(specd_buffer* dst, uint64_t offset, const void* src, uint64_t size);
  void download(const specd_buffer* src, uint64_t offset, void* dst, uint64_t size);
  void copy(specd_buffer* dst, uint64_t dst_offset, const specd_buffer* src, uint64_t src_offset,
            uint64_t size);

  void matmul(const specd_view& x, const specd_view& w, const specd_view& y);
  void rms_norm(const specd_view& x, const specd_view& weight, float eps, const specd_view& y);
  void rope(const specd_view& x, const specd_view& positions, const specd_rope_params& p);
  void get_rows(const specd_view& table, const specd_view& ids, const specd_view& y);
  void attention(const specd_view& q, const specd_view& k, const specd_view& v,
                 const specd_attention_mask& mask, const specd_attention_params& p,
                 const specd_view& out);
  void swiglu(const specd_view& gate, const specd_view& up, const specd_view& y);
  void swiglu_oai(const specd_view& gate, const specd_view& up, float alpha, float limit,
                  const specd_view& y);
  void add(const specd_view& a, const specd_view& b, const specd_view& y);
  void copy_rows(const specd_view& src, const specd_view& indices, const specd_view& dst);
  void attention_paged(const specd_view& q, const specd_view& k, const specd_view& v,
                       const specd_attention_mask& mask, const specd_kv_pages& pages,
                       const specd_attention_params& p, const specd_view& out);
  void set_rows(const specd_view& src, const specd_view& indices, const specd_view& dst);
  void gated_delta_net(const specd_view& qkv, const specd_view& alpha, const specd_view& beta,
                       const specd_view& conv_weight, const specd_view& dt_bias,
                       const specd_view& a, const specd_view& conv_states,
                       const specd_view& ssm_states, const specd_view& state_in,
                       const specd_view& state_out, const specd_delta_net_params& p,
                       const specd_view& out);
  void mul_sigmoid(const specd_view& x, const specd_view& gate, const specd_view& y);

 private:
  void bind();  // makes this device current for the calling thread
  // attention and attention_paged (pages null: the plain cache).
  void run_attention(const char* op, const specd_view& q, const specd_view& k, const specd_view& v,
                     const specd_attention_mask& mask, const specd_kv_pages* pages,
                     const specd_attention_params& p, const specd_view& out);
  // Waits for the stream, then reports (and clears) an invalid mask seen by a kernel.
  void finish();
  // Copies a validated int32 [1, n] row to the host (waits for pending ops).
  std::vector<int32_t> read_i32_row(const Mat& row);

  sdk::Host host_;
  int index_ = 0;
  cudaStream_t stream_ = nullptr;
  int* error_ = nullptr;  // device flag raised by kernels that find an invalid argument
  std::unique_ptr<Scratch> scratch_;
  std::unique_ptr<LargeGemm> large_;
  std::string name_;
  uint64_t memory_ = 0;
  uint32_t units_ = 0;  // multiprocessors / compute units
};

}  // namespace specd::gpu
