// A plugin of an older minor loads and receives parameters as its minor defined them; one of
// another major is refused with its id and its file named.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "../plugin/plugin_test_support.hpp"
#include "acceptance/acceptance_rule.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/plugin_params.hpp"
#include "plugin/registry.hpp"
#include "test_paths.hpp"

using specd::PluginRegistry;
using specd::test::loaded_cleanly;
using specd::test::NoPluginPathEnv;

namespace {

std::string plugin_file(const std::string& name) {
  return std::string(SPECD_VERSION_DIR) + "/specd-accept-version-" + name + ".so";
}

std::vector<specd::PluginParam> acceptance_params() {
  return specd::parse_config(
             "[target]\nmodel = \"t.gguf\"\n[acceptance]\nrule = \"x\"\n"
             "choices = [[0], [1, 2]]\n",
             "t.toml")
      .acceptance.params;
}

// Creates the rule with the parameters built for `minor`; "" or the error.
std::string create_error(const specd::LoadedPlugin& plugin, uint32_t minor) {
  const auto config = acceptance_params();
  specd::PluginParams params(config, minor);
  try {
    specd::AcceptanceRule rule(plugin, params.raw());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a plugin built against ABI 0.1 loads and gets arrays as TOML text") {
  NoPluginPathEnv env;
  PluginRegistry reg({plugin_file("old-minor")}, false);
  const specd::LoadedPlugin* p = &loaded_cleanly(reg, "org.specd.test.version-old-minor");
  CHECK(p->abi_minor == 1);
  CHECK(create_error(*p, p->abi_minor) == "");
  // What the plugin checks can fail: given the typed array it does not know, it refuses.
  CHECK(create_error(*p, SPECD_ABI_VERSION_MINOR).find("choices arrived as type 5") !=
        std::string::npos);
}

TEST_CASE("a plugin of the current minor gets arrays typed") {
  NoPluginPathEnv env;
  PluginRegistry reg({plugin_file("current")}, false);
  const specd::LoadedPlugin* p = &loaded_cleanly(reg, "version-current");
  CHECK(p->abi_minor == SPECD_ABI_VERSION_MINOR);
  CHECK(create_error(*p, p->abi_minor) == "");
  CHECK(create_error(*p, 1).find("choices arrived as type 4") != std::string::npos);
}

TEST_CASE("a plugin built for another major is refused by id and file") {
  NoPluginPathEnv env;
  PluginRegistry reg({plugin_file("other-major")}, false);
  CHECK(reg.plugins().empty());
  REQUIRE(reg.errors().size() == 1);
  const std::string& e = reg.errors()[0].message;
  CHECK(e.find("specd-accept-version-other-major.so") != std::string::npos);
  CHECK(e.find("plugin 'org.specd.test.version-other-major'") != std::string::npos);
  CHECK(e.find("ABI major version differs: plugin built for ABI " +
               std::to_string(SPECD_ABI_VERSION_MAJOR + 1) + ".0, host has ABI " +
               std::to_string(SPECD_ABI_VERSION_MAJOR) + "." +
               std::to_string(SPECD_ABI_VERSION_MINOR)) != std::string::npos);
  // Asking for it by name says why it is missing.
  try {
    reg.require("version-other-major", SPECD_KIND_ACCEPTANCE);
    FAIL("require found a refused plugin");
  } catch (const specd::UsageError& u) {
    CHECK(std::string(u.what()).find("org.specd.test.version-other-major") != std::string::npos);
  }
}

TEST_CASE("a plugin of a newer minor is refused unless it declares that it runs on this host") {
  NoPluginPathEnv env;
  const std::string next =
      std::to_string(SPECD_ABI_VERSION_MAJOR) + "." + std::to_string(SPECD_ABI_VERSION_MINOR + 1);
  {
    PluginRegistry reg({plugin_file("next-minor")}, false);
    CHECK(reg.plugins().empty());
    REQUIRE(reg.errors().size() == 1);
    CHECK(reg.errors()[0].message.find("plugin needs ABI " + next + ", newer than the host's") !=
          std::string::npos);
    // Asked for by id, the refused plugin's reason is the answer, not "unknown plugin".
    try {
      reg.require("org.specd.test.version-next-minor", SPECD_KIND_ACCEPTANCE);
      FAIL("a refused plugin was found");
    } catch (const specd::UsageError& e) {
      const std::string m = e.what();
      CHECK(m.find("was found but not loaded") != std::string::npos);
      CHECK(m.find("newer than the host's") != std::string::npos);
    }
  }
  {
    PluginRegistry reg({plugin_file("next-minor-runs-here")}, false);
    const specd::LoadedPlugin* p = &loaded_cleanly(reg, "version-next-minor-runs-here");
    CHECK(p->abi_minor == SPECD_ABI_VERSION_MINOR);  // driven as this host's minor
    CHECK(create_error(*p, p->abi_minor) == "");
    // What `specd plugins` shows: the minor it was built against and the oldest host.
    CHECK(p->built_minor == SPECD_ABI_VERSION_MINOR + 1);
    CHECK(p->min_host_minor <= SPECD_ABI_VERSION_MINOR);
  }
  {
    PluginRegistry reg({plugin_file("min-above-own")}, false);
    CHECK(reg.plugins().empty());
    REQUIRE(reg.errors().size() == 1);
    CHECK(reg.errors()[0].message.find("declares that it needs host ABI " + next +
                                       ", above the ABI") != std::string::npos);
  }
}
