/* specd ABI — the plugin entry point and descriptor.
 *
 * A plugin is a shared library that exports exactly one symbol:
 *
 *     const specd_plugin_descriptor* specd_plugin_entry(uint32_t host_abi_major,
 *                                                       uint32_t host_abi_minor);
 *
 * It returns a pointer to a static descriptor, or NULL when it cannot work with that host
 * (the host then reports "plugin refused host ABI x.y"). The descriptor is owned by the
 * library and must stay valid and unchanged until the library is unloaded; the host never
 * unloads a library while anything created from it is alive.
 *
 * Order of calls: specd_plugin_entry → init → (factory calls, any number) → deinit.
 * Thread rule: specd_plugin_entry, init and deinit are called from the host's main thread
 * only, never concurrently with each other or with any other call into the plugin.
 */
#ifndef SPECD_ENTRY_H
#define SPECD_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "specd/host.h"
#include "specd/status.h"
#include "specd/types.h"

SPECD_EXTERN_C_BEGIN

typedef struct specd_plugin_descriptor {
  uint32_t struct_size; /* sizeof(specd_plugin_descriptor) as the plugin was built */
  uint32_t abi_major;   /* SPECD_ABI_VERSION_MAJOR the plugin was built against */
  uint32_t abi_minor;   /* SPECD_ABI_VERSION_MINOR the plugin was built against */
  specd_plugin_kind kind;
  const char* id;          /* reverse-DNS, e.g. "org.specd.accept.rejection"; static */
  const char* version;     /* the plugin's own version, e.g. "1.2.0"; static */
  const char* name;        /* short human name, e.g. "rejection"; static; the TOML may use
                              it in place of the id when it is unique */
  const char* description; /* one line; static; may be NULL */

  /* Called once after loading, before anything else. `host` outlives the plugin.
   * Returns NULL on success; on failure the host reports the status and unloads the
   * library without calling deinit. May be NULL (nothing to do). [main-thread] */
  specd_status* (*init)(const specd_host* host);

  /* Called once before unloading, after every object created by the plugin has been
   * destroyed. May be NULL. [main-thread] */
  void (*deinit)(void);

  /* Returns the kind-specific vtable: a `const specd_acceptance_vtable*` for
   * SPECD_KIND_ACCEPTANCE, `const specd_proposer_vtable*` for SPECD_KIND_PROPOSER,
   * `const specd_verifier_vtable*` for SPECD_KIND_VERIFIER, `const specd_backend_vtable*`
   * for SPECD_KIND_BACKEND. The vtable is static, owned by the library.
   * Returns NULL if the library provides no such interface. [thread-safe] */
  const void* (*get_vtable)(specd_plugin_kind kind);

  /* ---- Appended in 0.6; read only when struct_size covers it --------------------------
   * The oldest host ABI minor the plugin runs on: it uses nothing a host of that minor
   * lacks without checking struct_size (or SPECD_HOST_HAS) first. A host whose minor is at
   * least this loads the plugin and drives it as the newest minor both know. 0 (or a
   * descriptor without the field): abi_minor. Must not exceed abi_minor. The SDK's macros
   * set it from SPECD_PLUGIN_MIN_HOST_ABI_MINOR when the plugin defines it. */
  uint32_t min_host_abi_minor;
} specd_plugin_descriptor;

/* Name of the one exported symbol. */
#define SPECD_PLUGIN_ENTRY_SYMBOL "specd_plugin_entry"

typedef const specd_plugin_descriptor* (*specd_plugin_entry_fn)(uint32_t host_abi_major,
                                                                uint32_t host_abi_minor);

/* The oldest host minor the SDK's macros declare: define it before including the SDK's
 * plugin headers to run on older hosts (default: the minor built against). */
#ifndef SPECD_PLUGIN_MIN_HOST_ABI_MINOR
#define SPECD_PLUGIN_MIN_HOST_ABI_MINOR SPECD_ABI_VERSION_MINOR
#endif

/* Layout of ABI 0.1 — frozen; do not modify above this line once released. */
#if UINTPTR_MAX == UINT64_MAX
SPECD_STATIC_ASSERT(offsetof(specd_plugin_descriptor, struct_size) == 0, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_plugin_descriptor, kind) == 12, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_plugin_descriptor, id) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_plugin_descriptor, init) == 48, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_plugin_descriptor, get_vtable) == 64, "frozen layout");
/* Layout of the 0.6 addition. */
SPECD_STATIC_ASSERT(offsetof(specd_plugin_descriptor, min_host_abi_minor) == 72, "frozen layout");
#endif

SPECD_EXTERN_C_END

#endif /* SPECD_ENTRY_H */
