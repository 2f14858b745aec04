// Deliberately broken plugins, one per failure the registry must report cleanly.
// Compiled once per fault with -DSPECD_FAULT=<name>.
#include <stdexcept>

#include "accept_nothing_rule.hpp"
#include "specd/acceptance.h"
#include "specd/entry.h"

#define FAULT_NO_ENTRY 1
#define FAULT_ABI_MAJOR 2
#define FAULT_ABI_MINOR 3
#define FAULT_INIT_FAILS 4
#define FAULT_INIT_THROWS 5
#define FAULT_DUPLICATE_ID 6
#define FAULT_ENTRY_THROWS 7
#define FAULT_NO_VTABLE 8
#define FAULT_UNDEFINED_SYMBOL 9

#if SPECD_FAULT == FAULT_UNDEFINED_SYMBOL
// Defined nowhere: the dynamic linker refuses the library (RTLD_NOW).
extern "C" int specd_test_symbol_defined_nowhere();
#endif

namespace {

const specd_host* g_host = nullptr;

specd_status* init(const specd_host* host) {
  g_host = host;
#if SPECD_FAULT == FAULT_UNDEFINED_SYMBOL
  if (specd_test_symbol_defined_nowhere() == 42) return nullptr;
#endif
#if SPECD_FAULT == FAULT_INIT_FAILS
  return host->status_create(host->context, SPECD_STATUS_UNAVAILABLE, "license file missing");
#elif SPECD_FAULT == FAULT_INIT_THROWS
  throw std::runtime_error("boom from init");
#else
  return nullptr;
#endif
}

specd_status* create(const specd_host*, const specd_params*, void** out) {
  *out = nullptr;
  return nullptr;
}

constexpr specd_acceptance_vtable g_vtable = accept_nothing_vtable(&create);

const void* get_vtable(specd_plugin_kind kind) {
#if SPECD_FAULT == FAULT_NO_VTABLE
  (void)kind;
  return nullptr;
#else
  return kind == SPECD_KIND_ACCEPTANCE ? &g_vtable : nullptr;
#endif
}

#if SPECD_FAULT == FAULT_ABI_MAJOR
constexpr uint32_t kMajor = SPECD_ABI_VERSION_MAJOR + 7;
#else
constexpr uint32_t kMajor = SPECD_ABI_VERSION_MAJOR;
#endif
#if SPECD_FAULT == FAULT_ABI_MINOR
constexpr uint32_t kMinor = SPECD_ABI_VERSION_MINOR + 5;
#else
constexpr uint32_t kMinor = SPECD_ABI_VERSION_MINOR;
#endif
#if SPECD_FAULT == FAULT_DUPLICATE_ID
constexpr const char* kId = "org.specd.test.good";
#else
constexpr const char* kId = "org.specd.test." SPECD_FAULT_NAME;
#endif

const specd_plugin_descriptor g_descriptor = {sizeof(specd_plugin_descriptor),
                                              kMajor,
                                              kMinor,
                                              SPECD_KIND_ACCEPTANCE,
                                              kId,
                                              "0.0.1",
                                              SPECD_FAULT_NAME,
                                              "deliberately broken",
                                              &init,
                                              nullptr,
                                              &get_vtable};

}  // namespace

#if SPECD_FAULT == FAULT_NO_ENTRY
extern "C" SPECD_EXPORT const void* some_other_symbol() {
  return &g_descriptor;
}
#else
extern "C" SPECD_EXPORT const specd_plugin_descriptor* specd_plugin_entry(uint32_t, uint32_t) {
#if SPECD_FAULT == FAULT_ENTRY_THROWS
  throw std::runtime_error("boom from entry");
#endif
  return &g_descriptor;
}
#endif
