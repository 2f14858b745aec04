#include "plugin/registry.hpp"

#include <dlfcn.h>

#include <boost/dll/runtime_symbol_info.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/error.hpp"
#include "plugin/host_services.hpp"
#include "plugin/load_guard.hpp"
#include "plugin/load_probe.hpp"

// The installed plugin folder relative to the CLI's (set by cmake/SpecdInstall.cmake).
#ifndef SPECD_PLUGINDIR_FROM_BINDIR
#define SPECD_PLUGINDIR_FROM_BINDIR "../lib/specd/plugins"
#endif

namespace fs = std::filesystem;

namespace specd {

struct PluginRegistry::Library {
  void* handle = nullptr;  // from dlopen
  LoadedPlugin plugin;
  bool initialised = false;
  ~Library() {
    if (initialised && plugin.descriptor && plugin.descriptor->deinit) plugin.descriptor->deinit();
    if (handle) dlclose(handle);
  }
};

bool is_plugin_file_name(std::string_view name) {
  constexpr std::string_view kinds[] = {"specd-backend-", "specd-propose-", "specd-verify-",
                                        "specd-accept-"};
  constexpr std::string_view suffix = ".so";
  if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix)
    return false;
  const std::string_view stem = name.substr(0, name.size() - suffix.size());
  for (std::string_view prefix : kinds)
    if (stem.size() > prefix.size() && stem.substr(0, prefix.size()) == prefix) return true;
  return false;
}

const char* kind_name(specd_plugin_kind kind) {
  switch (kind) {
    case SPECD_KIND_BACKEND:
      return "backend";
    case SPECD_KIND_PROPOSER:
      return "proposer";
    case SPECD_KIND_VERIFIER:
      return "verifier";
    case SPECD_KIND_ACCEPTANCE:
      return "acceptance";
    default:
      return "unknown";
  }
}

std::string executable_directory() {
  boost::system::error_code ec;
  auto path = boost::dll::program_location(ec);
  if (ec) return fs::current_path().string();
  return path.parent_path().string();
}

std::string default_plugin_folder() {
  const fs::path exe_dir(executable_directory());
  std::error_code ec;
  if (fs::is_directory(exe_dir / "plugins", ec)) return (exe_dir / "plugins").string();
  return (exe_dir / SPECD_PLUGINDIR_FROM_BINDIR).lexically_normal().string();
}

namespace {

// How long a library's loading code may run in the probe: 20 s (a CUDA or HIP backend loads
// its runtime there: seconds, not tens of them), or SPECD_PLUGIN_PROBE_TIMEOUT_S.
double load_probe_seconds() {
  const char* text = std::getenv("SPECD_PLUGIN_PROBE_TIMEOUT_S");
  if (!text || !*text) return 20;
  char* end = nullptr;
  const double s = std::strtod(text, &end);
  if (*end != '\0' || !(s > 0) || s > 3600)
    throw Error(std::string("SPECD_PLUGIN_PROBE_TIMEOUT_S='") + text +
                "' is not a number of seconds from 0 (exclusive) to 3600");
  return s;
}

bool has_elf_magic(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  const char elf[4] = {'\x7f', 'E', 'L', 'F'};
  return in.gcount() == 4 && std::memcmp(magic, elf, 4) == 0;
}

std::vector<std::string> split_path_list(const char* list) {
  std::vector<std::string> out;
  if (!list) return out;
  std::string s(list);
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

PluginRegistry::PluginRegistry(const std::vector<std::string>& config_paths,
                               bool beside_executable) {
  search_path_ = config_paths;
  for (auto& p : split_path_list(std::getenv("SPECD_PLUGIN_PATH"))) search_path_.push_back(p);
  std::string default_folder = default_plugin_folder();
  if (beside_executable) search_path_.push_back(default_folder);

  std::set<std::string> seen_files;
  for (const std::string& entry : search_path_) {
    std::error_code ec;
    fs::path path(entry);
    // The folder beside the executable is ours; every other entry the user named.
    const bool named = !(beside_executable && entry == default_folder);
    if (fs::is_regular_file(path, ec)) {
      if (seen_files.insert(fs::weakly_canonical(path, ec).string()).second)
        load_file(path.string(), named);
      continue;
    }
    if (!fs::is_directory(path, ec)) {
      // Only paths the user named are worth a complaint; the default folder may be absent.
      if (named)
        errors_.push_back({entry, "plugin path '" + entry + "' does not exist", /*warn=*/true});
      continue;
    }
    std::vector<fs::path> files, misnamed;
    for (const auto& item : fs::directory_iterator(path, ec)) {
      if (!item.is_regular_file(ec)) continue;
      if (is_plugin_file_name(item.path().filename().string()))
        files.push_back(item.path());
      else if (named && item.path().extension() == ".so")
        misnamed.push_back(item.path());
    }
    std::sort(files.begin(), files.end());  // deterministic order
    std::sort(misnamed.begin(), misnamed.end());
    // A library the user put in a folder they named, skipped for its name alone, would
    // otherwise vanish without a word (and an audit of that folder would pass on nothing).
    for (const auto& file : misnamed)
      errors_.push_back({file.string(),
                         file.string() + ": skipped: a plugin file must be named "
                                         "specd-<backend|propose|verify|accept>-<name>.so",
                         /*warn=*/true});
    for (const auto& file : files)
      if (seen_files.insert(fs::weakly_canonical(file, ec).string()).second)
        load_file(file.string(), named);
    // (Files that fail to load say so themselves.)
    if (named && files.empty())
      errors_.push_back({entry,
                         "plugin path '" + entry +
                             "' contributes no plugin: it holds no file named "
                             "specd-<kind>-<name>.so",
                         /*warn=*/true});
  }
}

size_t PluginRegistry::plugins_from(const std::string& entry, specd_plugin_kind kind) const {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(entry, ec);
  size_t n = 0;
  for (const LoadedPlugin* p : of_kind(kind)) {
    const fs::path file = fs::weakly_canonical(p->path, ec);
    n += file == root || file.parent_path() == root;
  }
  return n;
}

PluginRegistry::~PluginRegistry() {
  // Unload in reverse order of loading.
  while (!libraries_.empty()) libraries_.pop_back();
}

std::vector<std::string> PluginRegistry::warnings() const {
  std::vector<std::string> out;
  for (const PluginLoadError& e : errors_)
    if (e.warn) out.push_back(e.message);
  return out;
}

const LoadedPlugin* PluginRegistry::load_file(const std::string& path, bool named) {
  bool duplicate = false, probe_refused = false;
  auto fail = [&](const std::string& message) -> const LoadedPlugin* {
    errors_.push_back({path, path + ": " + message, named || duplicate || probe_refused});
    return nullptr;
  };
  std::error_code fec;
  if (!fs::exists(path, fec)) return fail("no such file");
  if (!has_elf_magic(path)) return fail("not a shared library (no ELF header)");
  // dlopen takes a name without a slash as a library to look up in the system's paths.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  // A library the user named (not the installation's own folder) runs its code in a child
  // process first (load_probe.hpp): one that crashes, exits or hangs there is refused with
  // a warning, and never runs in this process.
  if (auto refused = named ? probe_plugin_load(open_path, load_probe_seconds()) : std::nullopt) {
    probe_refused = true;
    return fail(*refused);
  }

  // Code of the library runs from here on (constructors at dlopen, then entry and init, and
  // on a failure its deinit and destructors when `lib` is released): the guard outlives it,
  // and what the code prints goes to standard error, never into the host's output.
  LoadGuard guard(path);
  StdoutToStderr its_output;
  auto lib = std::make_unique<Library>();
  dlerror();
  lib->handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    const char* error = dlerror();
    std::string why = error ? error : "unknown dlopen error";
    if (why.rfind(open_path + ": ", 0) == 0) why.erase(0, open_path.size() + 2);  // named once
    return fail("cannot be loaded as a shared library: " + why);
  }
  using EntryFn = const specd_plugin_descriptor* (*)(uint32_t, uint32_t);
  auto entry = reinterpret_cast<EntryFn>(dlsym(lib->handle, SPECD_PLUGIN_ENTRY_SYMBOL));
  if (!entry)
    return fail("not a specd plugin: it exports no '" SPECD_PLUGIN_ENTRY_SYMBOL "' symbol");

  const specd_plugin_descriptor* d = nullptr;
  try {
    d = entry(SPECD_ABI_VERSION_MAJOR, SPECD_ABI_VERSION_MINOR);
  } catch (...) {
    return fail("threw a C++ exception out of " SPECD_PLUGIN_ENTRY_SYMBOL
                " (exceptions must not cross the ABI)");
  }
  if (!d)
    return fail("refused host ABI " + std::to_string(SPECD_ABI_VERSION_MAJOR) + "." +
                std::to_string(SPECD_ABI_VERSION_MINOR));
  if (d->struct_size < offsetof(specd_plugin_descriptor, get_vtable) + sizeof(d->get_vtable))
    return fail("descriptor is too small (struct_size " + std::to_string(d->struct_size) + ")");
  std::string version = std::to_string(d->abi_major) + "." + std::to_string(d->abi_minor);
  std::string host_version =
      std::to_string(SPECD_ABI_VERSION_MAJOR) + "." + std::to_string(SPECD_ABI_VERSION_MINOR);
  // The descriptor's first fields up to `id` are the same in every major (docs/ABI-1.0.md),
  // so a plugin of another major is refused by its id, not only by its file.
  const std::string who = d->id && *d->id ? std::string("plugin '") + d->id + "': " : "";
  if (d->abi_major != SPECD_ABI_VERSION_MAJOR)
    return fail(who + "ABI major version differs: plugin built for ABI " + version +
                ", host has ABI " + host_version);
  // The oldest host minor it runs on: its own minor unless it declares an older one.
  uint32_t needs = d->abi_minor;
  if (d->struct_size >=
          offsetof(specd_plugin_descriptor, min_host_abi_minor) + sizeof(d->min_host_abi_minor) &&
      d->min_host_abi_minor != 0) {
    if (d->min_host_abi_minor > d->abi_minor)
      return fail(who + "declares that it needs host ABI " + std::to_string(d->abi_major) + "." +
                  std::to_string(d->min_host_abi_minor) + ", above the ABI " + version +
                  " it was built against");
    needs = d->min_host_abi_minor;
  }
  if (needs > SPECD_ABI_VERSION_MINOR)
    return fail(who + "plugin needs ABI " + std::to_string(d->abi_major) + "." +
                std::to_string(needs) + ", newer than the host's ABI " + host_version +
                "; upgrade specd");
  if (!d->id || !*d->id) return fail("descriptor has no id");
  if (!d->get_vtable) return fail("descriptor has no get_vtable");
  if (d->kind < SPECD_KIND_BACKEND || d->kind > SPECD_KIND_ACCEPTANCE)
    return fail("unknown plugin kind " + std::to_string(d->kind));
  for (const auto& other : libraries_)
    if (other->plugin.id == d->id) {
      duplicate = true;
      return fail(std::string("duplicate plugin id '") + d->id + "': ignored, the plugin from " +
                  other->plugin.path + " is used");
    }

  LoadedPlugin& p = lib->plugin;
  p.id = d->id;
  p.name = d->name ? d->name : d->id;
  p.version = d->version ? d->version : "";
  p.description = d->description ? d->description : "";
  p.path = path;
  p.kind = d->kind;
  p.abi_major = d->abi_major;
  // Driven as the newest minor both know (a plugin built against a newer minor that runs on
  // this host, per min_host_abi_minor, is this host's minor to it).
  p.abi_minor = std::min<uint32_t>(d->abi_minor, SPECD_ABI_VERSION_MINOR);
  p.built_minor = d->abi_minor;
  p.min_host_minor = needs;
  p.descriptor = d;

  if (d->init) {
    specd_status* status = nullptr;
    try {
      status = d->init(host_table());
    } catch (...) {
      return fail("init threw a C++ exception (exceptions must not cross the ABI)");
    }
    if (status) {
      std::string message = status_message(status);
      host_table()->status_free(nullptr, status);
      return fail("init failed: " + message);
    }
  }
  lib->initialised = true;
  try {
    p.vtable = d->get_vtable(d->kind);
  } catch (...) {
    return fail("get_vtable threw a C++ exception (exceptions must not cross the ABI)");
  }
  if (!p.vtable) return fail(std::string("provides no ") + kind_name(d->kind) + " interface");
  // Every vtable starts with uint32_t struct_size; it must at least hold that.
  if (*static_cast<const uint32_t*>(p.vtable) < sizeof(uint32_t) * 2)
    return fail("vtable is too small");
  libraries_.push_back(std::move(lib));
  return &libraries_.back()->plugin;
}

std::vector<const LoadedPlugin*> PluginRegistry::plugins() const {
  std::vector<const LoadedPlugin*> out;
  for (const auto& lib : libraries_) out.push_back(&lib->plugin);
  return out;
}

std::vector<const LoadedPlugin*> PluginRegistry::of_kind(specd_plugin_kind kind) const {
  std::vector<const LoadedPlugin*> out;
  for (const auto& lib : libraries_)
    if (lib->plugin.kind == kind) out.push_back(&lib->plugin);
  return out;
}

const LoadedPlugin* PluginRegistry::find(std::string_view id_or_name,
                                         specd_plugin_kind kind) const {
  const LoadedPlugin* by_name = nullptr;
  int name_matches = 0;
  for (const auto& lib : libraries_) {
    const LoadedPlugin& p = lib->plugin;
    if (p.kind != kind) continue;
    if (p.id == id_or_name) return &p;
    if (p.name == id_or_name) {
      by_name = &p;
      ++name_matches;
    }
  }
  return name_matches == 1 ? by_name : nullptr;
}

const LoadedPlugin& PluginRegistry::require(std::string_view id_or_name,
                                            specd_plugin_kind kind) const {
  if (const LoadedPlugin* p = find(id_or_name, kind)) return *p;
  // A plugin that was found but refused (a newer ABI, a failing init): its reason first.
  // It is named by its id in the message, or by the file name the SDK's CMake gives it.
  const std::string wanted(id_or_name);
  const char* prefix = kind == SPECD_KIND_ACCEPTANCE ? "accept"
                       : kind == SPECD_KIND_PROPOSER ? "propose"
                       : kind == SPECD_KIND_VERIFIER ? "verify"
                                                     : "backend";
  for (const auto& e : errors_) {
    const std::string stem = std::filesystem::path(e.path).stem().string();
    if (!wanted.empty() && (e.message.find("'" + wanted + "'") != std::string::npos ||
                            stem == std::string("specd-") + prefix + "-" + wanted))
      throw UsageError(std::string(kind_name(kind)) + " plugin '" + wanted +
                       "' was found but not loaded: " + e.message);
  }
  std::string known;
  for (const LoadedPlugin* p : of_kind(kind))
    known += (known.empty() ? "" : ", ") + p->name + " (" + p->id + ")";
  std::string message =
      std::string("unknown ") + kind_name(kind) + " plugin '" + std::string(id_or_name) + "'";
  message += known.empty() ? std::string(" (none is installed)") : " (known: " + known + ")";
  for (const auto& e : errors_) message += "\n  note: " + e.message;
  throw UsageError(message);
}

}  // namespace specd
