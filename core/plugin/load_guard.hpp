// While a plugin library is loaded and initialised its code runs inside the host: static
// constructors at dlopen, then specd_plugin_entry, init and get_vtable. A library that calls
// exit() there would end the process with a status of its choosing and no word of why; one
// that crashes would take the host down anonymously. A LoadGuard, alive around that code,
// reports either on stderr naming the file; exit() then ends the process with status 1.
// One guard at a time, on the thread that loads plugins.
#pragma once

#include <string>

namespace specd {

class LoadGuard {
 public:
  explicit LoadGuard(const std::string& library_path);
  ~LoadGuard();
  LoadGuard(const LoadGuard&) = delete;
  LoadGuard& operator=(const LoadGuard&) = delete;
};

}  // namespace specd
