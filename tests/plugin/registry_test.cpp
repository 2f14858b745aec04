// Plugin loading: each failure is a specific error naming the file, and the host goes on.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "engine/plugin_info.hpp"
#include "plugin/host_services.hpp"
#include "plugin/registry.hpp"
#include "plugin_test_support.hpp"
#include "specd/acceptance.h"
#include "specd/version.h"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using specd::PluginRegistry;
using specd::test::loaded_cleanly;
using specd::test::NoPluginPathEnv;

namespace {

std::string broken(const char* fault) {
  return std::string(SPECD_BROKEN_DIR) + "/" + fault;
}

// The single error a registry over `dir` reports (the test fails if there is not exactly one).
std::string only_error(const PluginRegistry& reg) {
  REQUIRE(reg.errors().size() == 1);
  return reg.errors()[0].message;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a good plugin loads, is found by id and by name, and reports its fields") {
  NoPluginPathEnv env;
  PluginRegistry reg({broken("good")}, false);
  const specd::LoadedPlugin* p = &loaded_cleanly(reg, "org.specd.test.good");
  CHECK(reg.find("good", SPECD_KIND_ACCEPTANCE) == p);
  CHECK(reg.find("good", SPECD_KIND_BACKEND) == nullptr);
  CHECK(p->version == "0.0.1");
  CHECK(contains(p->path, "specd-accept-good.so"));
  CHECK(specd::describe_plugin(*p).label == "lossy");
}

TEST_CASE("a file that is not a shared library is refused by name") {
  NoPluginPathEnv env;
  fs::path dir = fs::temp_directory_path() / "specd-registry-test-text";
  fs::create_directories(dir);
  std::ofstream(dir / "specd-accept-notes.so") << "this is text\n";
  PluginRegistry reg({dir.string()}, false);
  std::string e = only_error(reg);
  CHECK(contains(e, "specd-accept-notes.so"));
  CHECK(contains(e, "not a shared library"));
  fs::remove_all(dir);
}

TEST_CASE("a library without the entry symbol") {
  NoPluginPathEnv env;
  PluginRegistry reg({broken("no_entry")}, false);
  std::string e = only_error(reg);
  CHECK(contains(e, "specd-accept-no_entry.so"));
  CHECK(contains(e, "exports no 'specd_plugin_entry' symbol"));
}

TEST_CASE("ABI major mismatch names both versions") {
  NoPluginPathEnv env;
  PluginRegistry reg({broken("abi_major")}, false);
  std::string e = only_error(reg);
  const std::string minor = std::to_string(SPECD_ABI_VERSION_MINOR);
  CHECK(contains(e, "ABI major version differs"));
  CHECK(contains(e, "plugin built for ABI 7." + minor));
  CHECK(contains(e, "host has ABI 0." + minor));
}

TEST_CASE("a plugin needing a newer minor than the host") {
  NoPluginPathEnv env;
  PluginRegistry reg({broken("abi_minor")}, false);
  std::string e = only_error(reg);
  // The plugin's minor is the host's + 5.
  CHECK(contains(e, "needs ABI 0." + std::to_string(SPECD_ABI_VERSION_MINOR + 5)));
  CHECK(contains(e, "newer than the host's ABI 0." + std::to_string(SPECD_ABI_VERSION_MINOR)));
}

TEST_CASE("init failure and exceptions thrown inside the plugin") {
  NoPluginPathEnv env;
  {
    PluginRegistry reg({broken("init_fails")}, false);
    CHECK(contains(only_error(reg), "init failed: license file missing"));
  }
  {
    PluginRegistry reg({broken("init_throws")}, false);
    CHECK(contains(only_error(reg), "init threw a C++ exception"));
  }
  {
    PluginRegistry reg({broken("entry_throws")}, false);
    CHECK(contains(only_error(reg), "threw a C++ exception out of specd_plugin_entry"));
  }
  {
    PluginRegistry reg({broken("no_vtable")}, false);
    CHECK(contains(only_error(reg), "provides no acceptance interface"));
  }
}

TEST_CASE("duplicate ids: the second is refused, the first stays usable") {
  NoPluginPathEnv env;
  PluginRegistry reg({broken("good"), broken("duplicate_id")}, false);
  std::string e = only_error(reg);
  CHECK(contains(e, "duplicate plugin id 'org.specd.test.good'"));
  CHECK(contains(e, "specd-accept-duplicate_id.so"));
  CHECK(reg.find("org.specd.test.good", SPECD_KIND_ACCEPTANCE) != nullptr);
}

TEST_CASE("a missing configured path is reported; the host keeps running") {
  NoPluginPathEnv env;
  PluginRegistry reg({"/nonexistent/specd/plugins", broken("good")}, false);
  CHECK(contains(only_error(reg), "'/nonexistent/specd/plugins' does not exist"));
  CHECK(reg.plugins().size() == 1);  // only the good one
}

TEST_CASE("SPECD_PLUGIN_PATH is searched after the configured paths") {
  setenv("SPECD_PLUGIN_PATH", (broken("init_fails") + ":" + SPECD_EXAMPLES_DIR).c_str(), 1);
  PluginRegistry reg({broken("good")}, false);
  unsetenv("SPECD_PLUGIN_PATH");
  REQUIRE(reg.search_path().size() == 3);
  CHECK(reg.search_path()[0] == broken("good"));
  CHECK(reg.search_path()[1] == broken("init_fails"));
  CHECK(reg.find("com.example.accept.sample-only", SPECD_KIND_ACCEPTANCE) != nullptr);
  CHECK(reg.errors().size() == 1);
}

TEST_CASE("require() on an unknown id lists the known ones") {
  NoPluginPathEnv env;
  PluginRegistry reg({broken("good"), SPECD_EXAMPLES_DIR}, false);
  try {
    reg.require("rejekt", SPECD_KIND_ACCEPTANCE);
    FAIL("expected an error");
  } catch (const specd::UsageError& e) {
    std::string m = e.what();
    CHECK(contains(m, "unknown acceptance plugin 'rejekt'"));
    CHECK(contains(m, "sample-only (com.example.accept.sample-only)"));
    CHECK(contains(m, "good (org.specd.test.good)"));
  }
}

TEST_CASE("the example plugin's rule runs through the ABI") {
  NoPluginPathEnv env;
  PluginRegistry reg({SPECD_EXAMPLES_DIR}, false);
  const specd::LoadedPlugin& p = reg.require("sample-only", SPECD_KIND_ACCEPTANCE);
  auto* vt = static_cast<const specd_acceptance_vtable*>(p.vtable);
  CHECK(vt->label == SPECD_LABEL_EXACT);
  const specd_host* host = specd::host_table();
  void* rule = nullptr;
  specd_params params{sizeof(specd_params), 0, nullptr, nullptr};
  REQUIRE(vt->create(host, &params, &rule) == nullptr);
  double p_rows[3] = {0.25, 0.0, 0.75};
  specd_draft_tree tree{
      sizeof(specd_draft_tree), 0, 3, SPECD_SIBLINGS_IID, nullptr, nullptr, nullptr};
  specd_target_dists dists{sizeof(specd_target_dists), 1, 3, p_rows};
  specd::Rng rng(42);
  int counts[3] = {0, 0, 0};
  int32_t path[1];
  for (int i = 0; i < 4000; ++i) {
    specd_accept_result result{sizeof(specd_accept_result), 1, path, 0, -1};
    REQUIRE(vt->accept(rule, &tree, &dists, &rng, &result) == nullptr);
    CHECK(result.path_length == 0);
    REQUIRE(result.next_token >= 0);
    REQUIRE(result.next_token < 3);
    counts[result.next_token]++;
  }
  CHECK(counts[1] == 0);
  // Binomial(4000, 0.25): mean 1000, sd 27; 6 sd is a false-failure rate below 1e-8.
  CHECK(counts[0] > 1000 - 6 * 28);
  CHECK(counts[0] < 1000 + 6 * 28);
  // A parameter the rule does not know is an error naming it and where it is.
  specd_param bad{sizeof(specd_param), "delta", SPECD_PARAM_FLOAT, 0, 0, 0.5, nullptr,
                  "ab.toml:4:1"};
  specd_params with_bad{sizeof(specd_params), 1, &bad, nullptr};
  void* rule2 = nullptr;
  specd_status* s = vt->create(host, &with_bad, &rule2);
  REQUIRE(s != nullptr);
  std::string message = specd::status_message(s);
  host->status_free(host->context, s);
  CHECK(contains(message, "ab.toml:4:1: unknown key 'delta'"));
  vt->destroy(rule);
}

TEST_CASE("the plugin naming convention") {
  CHECK(specd::is_plugin_file_name("specd-backend-cpu.so"));
  CHECK(specd::is_plugin_file_name("specd-propose-ngram.so"));
  CHECK(specd::is_plugin_file_name("specd-accept-rejection.so"));
  CHECK(specd::is_plugin_file_name("specd-verify-x.so"));
  CHECK_FALSE(specd::is_plugin_file_name("specd-propose-ngram.so.bak"));
  CHECK_FALSE(specd::is_plugin_file_name("specd-propose-ngram.so.1"));
  CHECK_FALSE(specd::is_plugin_file_name("libhelper.so"));
  CHECK_FALSE(specd::is_plugin_file_name("specd-accept-.so"));
  CHECK_FALSE(specd::is_plugin_file_name("specd-test-good.so"));
  CHECK_FALSE(specd::is_plugin_file_name("specd-backend-cpu.dll"));
  CHECK_FALSE(specd::is_plugin_file_name(".so"));
}

TEST_CASE("in a folder only files named by the convention are loaded") {
  NoPluginPathEnv env;
  // Copies of a working plugin under names that are not plugins: a stale backup, a versioned
  // library, a helper. None may be loaded (none may shadow the real one by its id).
  const fs::path dir = fs::temp_directory_path() / "specd-registry-test-names";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path good = fs::path(broken("good")) / "specd-accept-good.so";
  for (const char* name : {"specd-accept-good.so.bak", "specd-accept-good.so.1", "libhelper.so",
                           "good.so", "specd-accept-good.so~"})
    fs::copy_file(good, dir / name);
  // The libraries skipped for their name are reported (a misnamed plugin would otherwise
  // vanish without a word), and so is a folder that contributes nothing.
  auto skipped = [&](const PluginRegistry& reg) {
    std::string all;
    for (const auto& e : reg.errors()) {
      CHECK(e.warn);
      all += e.message + "\n";
    }
    CHECK(reg.errors().size() == 3);
    CHECK(contains(all, (dir / "good.so").string() + ": skipped: a plugin file must be named"));
    CHECK(contains(all, (dir / "libhelper.so").string() + ": skipped"));
    CHECK(contains(all, "' contributes no plugin"));
    CHECK_FALSE(contains(all, ".bak"));
  };
  {
    PluginRegistry reg({dir.string()}, false);
    skipped(reg);
    CHECK(reg.plugins().empty());
  }
  PluginRegistry reg({dir.string(), broken("good")}, false);
  skipped(reg);
  const specd::LoadedPlugin* p = reg.find("org.specd.test.good", SPECD_KIND_ACCEPTANCE);
  REQUIRE(p != nullptr);
  CHECK(p->path == good.string());
  // A file named explicitly is loaded whatever its name: the user chose it.
  PluginRegistry explicit_file({(dir / "libhelper.so").string()}, false);
  CHECK(explicit_file.errors().empty());
  CHECK(explicit_file.plugins().size() == 1);
  fs::remove_all(dir);
}

TEST_CASE("a library the dynamic linker refuses is reported with the linker's own reason") {
  NoPluginPathEnv env;
  PluginRegistry reg({broken("undefined_symbol")}, false);
  const std::string e = only_error(reg);
  CHECK(contains(e, "specd-accept-undefined_symbol.so"));
  CHECK(contains(e, "undefined symbol"));
  CHECK(contains(e, "specd_test_symbol_defined_nowhere"));
  CHECK_FALSE(contains(e, "Bad file descriptor"));
}

TEST_CASE("duplicates and problems with named paths are warnings for every command") {
  NoPluginPathEnv env;
  PluginRegistry reg({"/nonexistent/specd/plugins", broken("good"), broken("duplicate_id")}, false);
  const std::vector<std::string> w = reg.warnings();
  REQUIRE(w.size() == 2);
  CHECK(contains(w[0], "'/nonexistent/specd/plugins' does not exist"));
  CHECK(contains(w[1], "duplicate plugin id 'org.specd.test.good'"));
  CHECK(contains(w[1], "specd-accept-good.so is used"));
}
