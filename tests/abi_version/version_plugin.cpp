// An acceptance rule whose descriptor claims an ABI version, compiled once per case:
//   SPECD_TEST_CASE 1: built against ABI 0.1 (every 0.1 layout is frozen, so the 0.1
//                      plugin is this source with abi_minor 1);
//   SPECD_TEST_CASE 2: built against the current minor;
//   SPECD_TEST_CASE 3: built for the next major;
//   SPECD_TEST_CASE 4: built for the next minor;
//   SPECD_TEST_CASE 5: built for the next minor, declaring that it runs on the current one;
//   SPECD_TEST_CASE 6: declaring a host minor above its own.
// create() checks how the key `choices` arrives: as TOML text for 0.1, as an array after.
#include <string>

#include "../plugin/accept_nothing_rule.hpp"
#include "specd/acceptance.h"
#include "specd/entry.h"

namespace {

#if SPECD_TEST_CASE == 1
constexpr uint32_t kMajor = SPECD_ABI_VERSION_MAJOR, kMinor = 1;
#elif SPECD_TEST_CASE == 2
constexpr uint32_t kMajor = SPECD_ABI_VERSION_MAJOR, kMinor = SPECD_ABI_VERSION_MINOR;
#elif SPECD_TEST_CASE == 3
constexpr uint32_t kMajor = SPECD_ABI_VERSION_MAJOR + 1, kMinor = 0;
#else
constexpr uint32_t kMajor = SPECD_ABI_VERSION_MAJOR;
constexpr uint32_t kMinor = SPECD_ABI_VERSION_MINOR + (SPECD_TEST_CASE == 6 ? 0 : 1);
#endif
#if SPECD_TEST_CASE == 5
constexpr uint32_t kMinHost = SPECD_ABI_VERSION_MINOR;
#elif SPECD_TEST_CASE == 6
constexpr uint32_t kMinHost = SPECD_ABI_VERSION_MINOR + 1;
#else
constexpr uint32_t kMinHost = 0;  // none declared: abi_minor
#endif

int g_rule;  // the rule holds no state: every object is this one

specd_status* create(const specd_host* host, const specd_params* params, void** out) {
  *out = &g_rule;
  for (uint32_t i = 0; params && i < params->count; ++i) {
    const specd_param& p = params->items[i];
    if (std::string(p.key) != "choices") continue;
    const bool text =
        p.type == SPECD_PARAM_STRING && std::string(p.string_value) == "[ [ 0 ], [ 1, 2 ] ]";
    bool array = false;
    if (kMinor >= 2 && p.type == SPECD_PARAM_ARRAY && SPECD_PARAMS_HAS(params, arrays)) {
      const specd_param_array* a = params->arrays[i];
      array = a && a->element_type == SPECD_PARAM_ARRAY && a->count == 2 &&
              a->arrays[1]->element_type == SPECD_PARAM_INT && a->arrays[1]->count == 2 &&
              a->arrays[1]->ints[1] == 2;
    }
    if (kMinor < 2 ? !text : !array)
      return host->status_create(host->context, SPECD_STATUS_INVALID_ARGUMENT,
                                 ("choices arrived as type " + std::to_string(p.type)).c_str());
  }
  return nullptr;
}

constexpr specd_acceptance_vtable g_vtable = accept_nothing_vtable(&create);

const void* get_vtable(specd_plugin_kind kind) {
  return kind == SPECD_KIND_ACCEPTANCE ? &g_vtable : nullptr;
}

const specd_plugin_descriptor g_descriptor = {sizeof(specd_plugin_descriptor),
                                              kMajor,
                                              kMinor,
                                              SPECD_KIND_ACCEPTANCE,
                                              SPECD_TEST_ID,
                                              "1.0.0",
                                              SPECD_TEST_NAME,
                                              "ABI version test rule",
                                              nullptr,
                                              nullptr,
                                              &get_vtable,
                                              kMinHost};

}  // namespace

extern "C" SPECD_EXPORT const specd_plugin_descriptor* specd_plugin_entry(uint32_t, uint32_t) {
  return &g_descriptor;
}
