// The CPU device: host-memory buffers, a thread pool, argument checks and op dispatch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "gemm/gemm.hpp"
#include "runtime/cpu_buffer.hpp"
#include "runtime/huge_pages.hpp"
#include "runtime/op_profile.hpp"
#include "runtime/thread_pool.hpp"
#include "specd/cpp/host.hpp"

namespace specd::cpu {

class CpuDevice {
 public:
  static uint32_t score(sdk::Host host, std::string& reason);
  CpuDevice(sdk::Host host, const specd_device_params& params);

  void info(specd_device_info& info);
  void synchronize() {}

  specd_buffer* alloc(uint64_t size);
  void free(specd_buffer* buffer);
  specd_buffer* wrap_host(const void* data, uint64_t size);
  specd_buffer* wrap_weights(const void* data, uint64_t size, specd_dtype dtype, int64_t rows,
                             int64_t cols, bool& copied);
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
  void attention_paged(const specd_view& q, const specd_view& k, const specd_view& v,
                       const specd_attention_mask& mask, const specd_kv_pages& pages,
                       const specd_attention_params& p, const specd_view& out);
  void set_rows(const specd_view& src, const specd_view& indices, const specd_view& dst);
  void swiglu(const specd_view& gate, const specd_view& up, const specd_view& y);
  void swiglu_oai(const specd_view& gate, const specd_view& up, float alpha, float limit,
                  const specd_view& y);
  void add(const specd_view& a, const specd_view& b, const specd_view& y);
  void copy_rows(const specd_view& src, const specd_view& indices, const specd_view& dst);
  void gated_delta_net(const specd_view& qkv, const specd_view& alpha, const specd_view& beta,
                       const specd_view& conv_weight, const specd_view& dt_bias,
                       const specd_view& a, const specd_view& conv_states,
                       const specd_view& ssm_states, const specd_view& state_in,
                       const specd_view& state_out, const specd_delta_net_params& p,
                       const specd_view& out);
  void mul_sigmoid(const specd_view& x, const specd_view& gate, const specd_view& y);

 private:
  sdk::Host host_;
  std::unique_ptr<ThreadPool> pool_;
  GemmKernel kernel_ = GemmKernel::kGeneric;
  QuantFamily quant_ = QuantFamily::kInt8;
  LargeGemm large_;
  // Whether q4_K, q6_K and q8_0 weights are packed for the AVX-512 kernels (it runs here and int8
  // is chosen).
  bool packs_ = false;
  std::unique_ptr<OpProfile> profile_;  // $SPECD_CPU_PROFILE, or null
  bool huge_pages_;  // huge_pages_wanted(): weights copied to huge pages, large buffers too
  WeightArena weight_arena_;  // the weight matrices' memory (packed, or copied for huge pages)
};

// Checks a view and returns its validated form; throws naming `op` and `arg`.
Mat check_view(const specd_view* v, const char* op, const char* arg,
               std::initializer_list<specd_dtype> dtypes, bool output = false);

}  // namespace specd::cpu
