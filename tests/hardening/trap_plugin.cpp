// A library whose constructor ends the process the moment it is loaded: exit(0) with
// SPECD_TRAP_EXIT, abort() otherwise. The tests copy it into plugin folders under various
// names; specd must never load it unless its name says it is a plugin, and when it does,
// must say which file ended the run.
#include <cstdlib>

#include "specd/entry.h"

namespace {

__attribute__((constructor)) void trap_on_load() {
#ifdef SPECD_TRAP_EXIT
  std::exit(0);
#else
  std::abort();
#endif
}

const specd_plugin_descriptor* never_reached() {
  return nullptr;
}

}  // namespace

extern "C" SPECD_EXPORT const specd_plugin_descriptor* specd_plugin_entry(uint32_t, uint32_t) {
  return never_reached();
}
