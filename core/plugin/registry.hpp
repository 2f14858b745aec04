// The plugin registry: finds plugin libraries, loads them with Boost.DLL, checks their ABI
// and keeps them loaded for the life of the registry (no unloading while anything from a
// library is alive: destroy the registry last).
//
// Search order: the paths given (from [plugins] paths in the TOML), then the directories in
// SPECD_PLUGIN_PATH (colon-separated), then the plugins/ folder beside the executable.
// A path may name a directory or a single library file. In a directory only files that
// follow the naming convention are loaded (is_plugin_file_name: specd-<kind>-<name>.so), so
// helper libraries, versioned .so.N files and stale copies (.so.bak) are never executed; a
// file named explicitly is loaded whatever its name.
//
// Trust: loading a library runs its code (constructors first). Every folder searched is
// code the process runs with its privileges (docs/PLUGINS.md). While a library is being
// loaded, a call to exit() or a crash (abort, segfault) is reported on stderr naming the
// file, and exit() then ends the process with status 1 instead of the status it chose.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "specd/entry.h"

namespace specd {

struct LoadedPlugin {
  std::string id;       // reverse-DNS id
  std::string name;     // short name
  std::string version;  // the plugin's own version
  std::string description;
  std::string path;  // the library file it came from
  specd_plugin_kind kind = 0;
  uint32_t abi_major = 0, abi_minor = 0;  // the ABI it is driven as (the newer one: the host's)
  uint32_t built_minor = 0;               // SPECD_ABI_VERSION_MINOR it was built against
  uint32_t min_host_minor = 0;            // the oldest host minor it declares it runs on
  const specd_plugin_descriptor* descriptor = nullptr;
  const void* vtable = nullptr;  // the kind's vtable, e.g. const specd_acceptance_vtable*
};

// One problem met while loading, with the file it concerns. Loading goes on after it.
struct PluginLoadError {
  std::string path;
  std::string message;  // complete sentence, names the file
  // Worth a warning in every command, not only in `specd plugins`: a duplicate id (one copy
  // shadows another) or a problem with a path the user named ([plugins] paths, the paths
  // given to the registry, SPECD_PLUGIN_PATH), as opposed to the folder beside the executable.
  bool warn = false;
};

class PluginRegistry {
 public:
  // Searches and loads every plugin found. Problems are collected in errors(), never thrown.
  // `beside_executable = false` skips the plugins/ folder beside the executable (for tests
  // that need a registry holding exactly the plugins they name).
  explicit PluginRegistry(const std::vector<std::string>& config_paths = {},
                          bool beside_executable = true);
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // Loads one library file; returns nullptr and records an error on failure. `named`: the
  // user named this file or its folder (PluginLoadError::warn).
  const LoadedPlugin* load_file(const std::string& path, bool named = true);

  const std::vector<PluginLoadError>& errors() const { return errors_; }
  // The errors with `warn` set, one line each ("warning: ..." is the caller's prefix).
  std::vector<std::string> warnings() const;
  std::vector<const LoadedPlugin*> plugins() const;
  std::vector<const LoadedPlugin*> of_kind(specd_plugin_kind kind) const;

  // Finds a plugin of `kind` by id or by short name (when the name is unique).
  const LoadedPlugin* find(std::string_view id_or_name, specd_plugin_kind kind) const;

  // Like find, but throws UsageError "unknown <kind> 'x' (known: a, b, c)" when absent.
  const LoadedPlugin& require(std::string_view id_or_name, specd_plugin_kind kind) const;

  // How many plugins of `kind` were loaded from `entry` (a search-path entry: a file, or a
  // folder's files).
  size_t plugins_from(const std::string& entry, specd_plugin_kind kind) const;

  // The directories searched, in order (for messages and `specd plugins`).
  const std::vector<std::string>& search_path() const { return search_path_; }

 private:
  struct Library;
  std::vector<std::string> search_path_;
  std::vector<std::unique_ptr<Library>> libraries_;
  std::vector<PluginLoadError> errors_;
};

// "backend", "proposer", "verifier", "acceptance" (or "unknown").
const char* kind_name(specd_plugin_kind kind);

// The plugin naming convention for files found in a folder: "specd-<kind>-<name>.so" with
// <kind> one of backend, propose, verify, accept and a non-empty <name>; exactly ".so" at
// the end (no version suffix, no ".bak"). `file_name` is a name, not a path.
bool is_plugin_file_name(std::string_view file_name);

// The folder of the running executable (for the plugins/ beside it).
std::string executable_directory();

// The last folder of the search order, the bundled plugins': plugins/ beside the executable
// when it exists (the build tree: build/bin/plugins), else the install layout's
// lib/specd/plugins relative to the executable (<prefix>/bin/../lib/specd/plugins;
// cmake/SpecdInstall.cmake).
std::string default_plugin_folder();

}  // namespace specd
