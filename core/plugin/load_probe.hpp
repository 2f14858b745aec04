// A plugin library's code runs when it is loaded: static constructors at dlopen, then
// specd_plugin_entry, init and get_vtable. Before the host loads a library from a path the
// user named ([plugins] paths, SPECD_PLUGIN_PATH; not the installation's own plugins folder),
// a probe runs that code in a child process (fork) whose output goes nowhere, and waits at
// most 20 s (SPECD_PLUGIN_PROBE_TIMEOUT_S): a library that crashes, calls exit() or never
// returns there is refused, named, and the host goes on without it. The probe costs a fork
// and a load per library (about 25 ms for a backend that loads oneDNN). When the host then
// loads the library itself, what its code prints to standard output goes to standard error
// (StdoutToStderr), so it cannot corrupt `run --json`.
// Thread rule: called from the thread that loads plugins, before the engine's threads start.
#pragma once

#include <optional>
#include <string>

namespace specd {

// Nothing when the library loads in a child process within `timeout_s` (or fails there in a
// way the host's own load reports better, such as a missing symbol); else why it is refused.
std::optional<std::string> probe_plugin_load(const std::string& open_path, double timeout_s);

// For its lifetime, writes to standard output (file descriptor 1) go to standard error.
class StdoutToStderr {
 public:
  StdoutToStderr();
  ~StdoutToStderr();
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  int saved_ = -1;
};

}  // namespace specd
