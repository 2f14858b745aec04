// Every vendor runtime/library call goes through SPECD_GPU_CHECK: a failure becomes a
// PluginError (hence a specd_status at the ABI boundary), never an abort or exit.
#pragma once

#include <string>

#include "compat.hpp"

namespace specd::gpu {

// Throws sdk::PluginError naming `what` (the call's text) and the runtime's error string;
// an allocation failure maps to SPECD_STATUS_OUT_OF_MEMORY, anything else to UNAVAILABLE.
void check_call(cudaError_t error, const char* what);

// For calls that must not throw (destructors, buffer_free): the error as text, "" if none.
std::string check_call_noexcept(cudaError_t error, const char* what) noexcept;

// How many devices the runtime sees. 0, with `reason` set to "no <api> device: ...", when
// it sees none or fails (no GPU, no driver); never throws for that.
int visible_devices(const char* api, std::string& reason);

}  // namespace specd::gpu

#define SPECD_GPU_CHECK(call) ::specd::gpu::check_call((call), #call)
#define SPECD_GPU_CHECK_NOEXCEPT(call) ::specd::gpu::check_call_noexcept((call), #call)
