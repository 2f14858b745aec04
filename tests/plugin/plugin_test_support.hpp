// Helpers of the plugin-loading tests: registries that see only the paths a test names.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <string_view>

#include "plugin/registry.hpp"

namespace specd::test {

// Unsets SPECD_PLUGIN_PATH so that a registry loads only the paths a test gives it.
struct NoPluginPathEnv {
  NoPluginPathEnv() { unsetenv("SPECD_PLUGIN_PATH"); }
};

// The acceptance plugin `id_or_name` of a registry that reported no errors; the case stops
// where it is missing.
inline const LoadedPlugin& loaded_cleanly(const PluginRegistry& reg, std::string_view id_or_name) {
  INFO("plugin " << id_or_name);
  CHECK(reg.errors().empty());
  const LoadedPlugin* p = reg.find(id_or_name, SPECD_KIND_ACCEPTANCE);
  REQUIRE(p != nullptr);
  return *p;
}

}  // namespace specd::test
