// A test backend whose every allocation fails with SPECD_STATUS_OUT_OF_MEMORY
// (tests/hardening): the engine must turn that into a clean specd::Error naming the
// backend, with nothing leaked, and later engines must work. Selected only by name
// (`[engine] backend = "oom"`); its score is the lowest that can run, so "auto" never
// prefers it over a real backend.
#include <specd/cpp/backend.hpp>
#include <specd/cpp/plugin.hpp>

#include <cstdio>
#include <string>

namespace {

using specd::sdk::PluginError;

[[noreturn]] void unsupported(const char* op) {
  throw PluginError(SPECD_STATUS_UNSUPPORTED, std::string("oom backend: ") + op +
                                                  " is not implemented (it holds no buffers)");
}

class OomDevice {
 public:
  static uint32_t score(specd::sdk::Host, std::string&) { return 1; }
  OomDevice(specd::sdk::Host, const specd_device_params&) {}
  void info(specd_device_info& info) {
    info.threads = 1;
    info.invariant_max_rows = 64;
    std::snprintf(info.name, sizeof info.name, "oom (test)");
  }
  void synchronize() {}
  specd_buffer* alloc(uint64_t size) {
    throw PluginError(SPECD_STATUS_OUT_OF_MEMORY,
                      "oom backend: cannot allocate " + std::to_string(size) + " bytes");
  }
  void free(specd_buffer*) {}
  void upload(specd_buffer*, uint64_t, const void*, uint64_t) { unsupported("upload"); }
  void download(const specd_buffer*, uint64_t, void*, uint64_t) { unsupported("download"); }
  void copy(specd_buffer*, uint64_t, const specd_buffer*, uint64_t, uint64_t) {
    unsupported("copy");
  }
  void matmul(const specd_view&, const specd_view&, const specd_view&) { unsupported("matmul"); }
  void rms_norm(const specd_view&, const specd_view&, float, const specd_view&) {
    unsupported("rms_norm");
  }
  void rope(const specd_view&, const specd_view&, const specd_rope_params&) { unsupported("rope"); }
  void get_rows(const specd_view&, const specd_view&, const specd_view&) {
    unsupported("get_rows");
  }
  void attention(const specd_view&, const specd_view&, const specd_view&,
                 const specd_attention_mask&, const specd_attention_params&, const specd_view&) {
    unsupported("attention");
  }
  void swiglu(const specd_view&, const specd_view&, const specd_view&) { unsupported("swiglu"); }
  void add(const specd_view&, const specd_view&, const specd_view&) { unsupported("add"); }
  void copy_rows(const specd_view&, const specd_view&, const specd_view&) {
    unsupported("copy_rows");
  }
};

}  // namespace

SPECD_BACKEND_PLUGIN(OomDevice, "org.specd.test.backend.oom", "oom", "0.0.1",
                     "test backend: every allocation fails with out-of-memory",
                     SPECD_BACKEND_HOST_MEMORY)
