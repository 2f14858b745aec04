// A library whose constructor misbehaves the moment it is loaded: exit(0) with
// SPECD_TRAP_EXIT, an endless wait with SPECD_TRAP_LOOP, a line on standard output with
// SPECD_TRAP_PRINT (then it refuses the host's ABI), abort() otherwise. The tests copy it into
// plugin folders under various names; specd must never load it unless its name says it is a
// plugin, and when it does, must refuse it naming the file, and keep its output out of its own.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "specd/entry.h"

namespace {

__attribute__((constructor)) void trap_on_load() {
#if defined(SPECD_TRAP_EXIT)
  std::exit(0);
#elif defined(SPECD_TRAP_LOOP)
  for (;;) pause();
#elif defined(SPECD_TRAP_PRINT)
  std::printf("TRAP-PRINTED {\"not\": \"specd's\"}\n");
  std::fflush(stdout);
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
