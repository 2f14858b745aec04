/* specd SDK — C helper macros: a plain-C plugin without hand-written descriptor boilerplate.
 *
 * Header-only, no ABI of its own: everything here expands to the structs of entry.h,
 * acceptance.h and proposer.h. A C plugin writes its functions and one macro:
 *
 *     #include <specd/c/plugin.h>
 *
 *     static specd_status* my_create(const specd_host* host, const specd_params* params,
 *                                    void** out);
 *     static void my_destroy(void* rule);
 *     static specd_status* my_accept(void* rule, const specd_draft_tree* tree,
 *                                    const specd_target_dists* target, specd_rng* rng,
 *                                    specd_accept_result* result);
 *
 *     SPECD_C_ACCEPTANCE_PLUGIN("com.example.accept.mine", "mine", "1.0.0", "what it does",
 *                               SPECD_LABEL_EXACT, SPECD_ACCEPT_NEEDS_Q,
 *                               my_create, my_destroy, my_accept, NULL)
 *
 * The macros define the kind's static vtable, the descriptor and the one exported symbol,
 * specd_plugin_entry. Use them once per
 * plugin, at file scope, in one translation unit, after the functions they name. Build with
 * specd_add_plugin() from the CMake package so that only specd_plugin_entry is exported.
 *
 * The entry point returns the descriptor whatever the host's version: the host compares
 * the versions and refuses a plugin of another major naming its id.
 *
 * Thread rules: those of the functions you pass (entry.h, acceptance.h, proposer.h);
 * the helper functions below are [thread-safe].
 */
#ifndef SPECD_C_PLUGIN_H
#define SPECD_C_PLUGIN_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "specd/acceptance.h"
#include "specd/entry.h"
#include "specd/proposer.h"

SPECD_EXTERN_C_BEGIN

/* Builds a status with a printf-style message (at most 511 bytes; longer is cut), through
 * `host`. Returns what host->status_create returns (never NULL). Ownership: the caller's, as
 * for status_create; return it from an ABI function to pass it on. */
static inline specd_status* specd_c_status(const specd_host* host, specd_status_code code,
                                           const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  return host->status_create(host->context, code, message);
}

/* Where a parameter was set ("file:line:col"), or "" when the host gave no location. */
static inline const char* specd_c_location(const specd_param* param) {
  return param && param->location ? param->location : "";
}

/* The parameter `key` of `params`, or NULL when the configuration does not set it.
 * Borrowed: valid as long as `params` (the create call). */
static inline const specd_param* specd_c_param(const specd_params* params, const char* key) {
  uint32_t i;
  if (!params) return NULL;
  for (i = 0; i < params->count; ++i)
    if (strcmp(params->items[i].key, key) == 0) return &params->items[i];
  return NULL;
}

/* The first key of `params` that is not in the NULL-terminated list `known`, or NULL when
 * every key is known: report it as an error naming the key and its `location`. */
static inline const specd_param* specd_c_unknown_param(const specd_params* params,
                                                       const char* const* known) {
  uint32_t i;
  const char* const* k;
  if (!params) return NULL;
  for (i = 0; i < params->count; ++i) {
    int found = 0;
    for (k = known; *k && !found; ++k) found = strcmp(params->items[i].key, *k) == 0;
    if (!found) return &params->items[i];
  }
  return NULL;
}

SPECD_EXTERN_C_END

/* The descriptor and entry point around `VTABLE_PTR`, a pointer to the kind's static vtable.
 * The descriptor has no init and no deinit: keep the host table that create receives in the
 * object it makes, as the host passes it to every factory call. */
#define SPECD_C_PLUGIN_ENTRY(KIND, ID, NAME, VERSION, DESCRIPTION, VTABLE_PTR)                 \
  static const void* specd_c_get_vtable(specd_plugin_kind kind) {                              \
    return kind == (KIND) ? (const void*)(VTABLE_PTR) : NULL;                                  \
  }                                                                                            \
  static const specd_plugin_descriptor specd_c_descriptor = {sizeof(specd_plugin_descriptor),  \
                                                             SPECD_ABI_VERSION_MAJOR,          \
                                                             SPECD_ABI_VERSION_MINOR,          \
                                                             (KIND),                           \
                                                             (ID),                             \
                                                             (VERSION),                        \
                                                             (NAME),                           \
                                                             (DESCRIPTION),                    \
                                                             NULL,                             \
                                                             NULL,                             \
                                                             specd_c_get_vtable,               \
                                                             SPECD_PLUGIN_MIN_HOST_ABI_MINOR}; \
  SPECD_EXTERN_C SPECD_EXPORT const specd_plugin_descriptor* specd_plugin_entry(               \
      uint32_t host_abi_major, uint32_t host_abi_minor) {                                      \
    (void)host_abi_major;                                                                      \
    (void)host_abi_minor;                                                                      \
    return &specd_c_descriptor;                                                                \
  }

/* An acceptance rule (acceptance.h): LABEL is a SPECD_LABEL_*, FLAGS SPECD_ACCEPT_* bits,
 * OUTCOMES may be NULL. */
#define SPECD_C_ACCEPTANCE_PLUGIN(ID, NAME, VERSION, DESCRIPTION, LABEL, FLAGS, CREATE, DESTROY, \
                                  ACCEPT, OUTCOMES)                                              \
  static const specd_acceptance_vtable specd_c_acceptance_vtable =                               \
      {sizeof(specd_acceptance_vtable),                                                          \
       (LABEL),                                                                                  \
       (FLAGS),                                                                                  \
       (CREATE),                                                                                 \
       (DESTROY),                                                                                \
       (ACCEPT),                                                                                 \
       (OUTCOMES)};                                                                              \
  SPECD_C_PLUGIN_ENTRY(SPECD_KIND_ACCEPTANCE, ID, NAME, VERSION, DESCRIPTION,                    \
                       &specd_c_acceptance_vtable)

/* A proposer (proposer.h): FLAGS are SPECD_PROPOSER_* bits, DEFAULT_RULE the id or name of
 * the acceptance rule used when the configuration names none. */
#define SPECD_C_PROPOSER_PLUGIN(ID, NAME, VERSION, DESCRIPTION, FLAGS, DEFAULT_RULE, CREATE,   \
                                DESTROY, BEGIN, PROPOSE, COMMIT)                               \
  static const specd_proposer_vtable specd_c_proposer_vtable = {sizeof(specd_proposer_vtable), \
                                                                0,                             \
                                                                (FLAGS),                       \
                                                                (DEFAULT_RULE),                \
                                                                (CREATE),                      \
                                                                (DESTROY),                     \
                                                                (BEGIN),                       \
                                                                (PROPOSE),                     \
                                                                (COMMIT),                      \
                                                                NULL,                          \
                                                                NULL,                          \
                                                                NULL,                          \
                                                                NULL,                          \
                                                                NULL};                         \
  SPECD_C_PLUGIN_ENTRY(SPECD_KIND_PROPOSER, ID, NAME, VERSION, DESCRIPTION,                    \
                       &specd_c_proposer_vtable)

/* A batched proposer (proposer.h, ABI 0.5): one object drafts for many sequences. FLAGS get
 * SPECD_PROPOSER_BATCHED added; OPEN, CLOSE, SEQ_BEGIN, PROPOSE_BATCH and SEQ_COMMIT are the
 * functions of sequence_open .. sequence_commit. */
#define SPECD_C_BATCH_PROPOSER_PLUGIN(ID, NAME, VERSION, DESCRIPTION, FLAGS, DEFAULT_RULE, CREATE, \
                                      DESTROY, OPEN, CLOSE, SEQ_BEGIN, PROPOSE_BATCH, SEQ_COMMIT)  \
  static const specd_proposer_vtable specd_c_proposer_vtable = {sizeof(specd_proposer_vtable),     \
                                                                0,                                 \
                                                                (FLAGS) | SPECD_PROPOSER_BATCHED,  \
                                                                (DEFAULT_RULE),                    \
                                                                (CREATE),                          \
                                                                (DESTROY),                         \
                                                                NULL,                              \
                                                                NULL,                              \
                                                                NULL,                              \
                                                                (OPEN),                            \
                                                                (CLOSE),                           \
                                                                (SEQ_BEGIN),                       \
                                                                (PROPOSE_BATCH),                   \
                                                                (SEQ_COMMIT)};                     \
  SPECD_C_PLUGIN_ENTRY(SPECD_KIND_PROPOSER, ID, NAME, VERSION, DESCRIPTION,                        \
                       &specd_c_proposer_vtable)

#endif /* SPECD_C_PLUGIN_H */
