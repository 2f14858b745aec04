// cuBLAS calls go through SPECD_CUBLAS_CHECK, the cuBLAS twin of SPECD_GPU_CHECK: a failure
// becomes a PluginError (a specd_status at the ABI), never an abort.
#pragma once

#include <cublas_v2.h>

#include <string>

#include "specd/cpp/host.hpp"

namespace specd::gpu {

inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string name(what);
  name.resize(name.find('(') == std::string::npos ? name.size() : name.find('('));
  const specd_status_code code =
      status == CUBLAS_STATUS_ALLOC_FAILED ? SPECD_STATUS_OUT_OF_MEMORY : SPECD_STATUS_UNAVAILABLE;
  throw sdk::PluginError(code, name + ": " + cublasGetStatusString(status) + " (status " +
                                   std::to_string(static_cast<int>(status)) + ")");
}

}  // namespace specd::gpu

#define SPECD_CUBLAS_CHECK(call) ::specd::gpu::check_cublas((call), #call)
