/* specd ABI — host services.
 *
 * The host passes this table to a plugin's `init` and again to every factory function; a
 * proposer's `create` receives a table of its own, whose context is the proposer's run and
 * whose `models` serve it (other tables' `models` answer SPECD_STATUS_UNSUPPORTED). Use the
 * table an object was created with for that object's calls. Plugins never link against the
 * host: everything they need from it is in here.
 * Ownership: the table and its context are owned by the host and outlive every object the
 * plugin creates. A plugin built against an older minor sees a shorter table; check
 * `struct_size` (or SPECD_HOST_HAS) before using a field appended after minor 1.
 */
#ifndef SPECD_HOST_H
#define SPECD_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "specd/model.h"
#include "specd/status.h"
#include "specd/types.h"

SPECD_EXTERN_C_BEGIN

typedef uint32_t specd_log_level;
#define SPECD_LOG_DEBUG ((specd_log_level)0)
#define SPECD_LOG_INFO ((specd_log_level)1)
#define SPECD_LOG_WARN ((specd_log_level)2)
#define SPECD_LOG_ERROR ((specd_log_level)3)

typedef struct specd_host {
  uint32_t struct_size;
  uint32_t abi_major; /* the host's ABI version */
  uint32_t abi_minor;
  void* context; /* opaque; pass back as the first argument of every function below */

  /* Writes a log line. `plugin_id` and `message` are borrowed (UTF-8).
   * Thread rule: [thread-safe]. */
  void (*log)(void* context, specd_log_level level, const char* plugin_id, const char* message);

  /* Creates an error object; the message is copied. Never returns NULL (on allocation
   * failure it returns a static out-of-memory status that status_free ignores).
   * Ownership: the caller owns the result and either returns it through the ABI (which
   * passes ownership on) or frees it. Thread rule: [thread-safe]. */
  specd_status* (*status_create)(void* context, specd_status_code code, const char* message);

  /* Releases a status. NULL is allowed. Thread rule: [thread-safe]. */
  void (*status_free)(void* context, specd_status* status);

  /* Reads a status. The returned message is owned by the status and lives as long as it.
   * Thread rule: [thread-safe] (on distinct statuses). */
  specd_status_code (*status_code)(void* context, const specd_status* status);
  const char* (*status_message)(void* context, const specd_status* status);

  /* Uniform double in [0, 1) with 53 random bits, from a host-owned generator. The `rng`
   * handle is passed to the plugin with each call that may use randomness.
   * Thread rule: [same-thread] as the call that handed out `rng`. */
  double (*rng_uniform)(void* context, specd_rng* rng);

  /* Retired (0.1-0.6 named it rng_bits; no plugin of this SDK calls it): 64 random bits
   * from the same generator. The host still fills it for plugins built against 0.6 or
   * older; new code uses rng_uniform. It leaves the table at 1.0. Thread rule: as
   * rng_uniform. */
  uint64_t (*retired_rng_bits)(void* context, specd_rng* rng);

  /* Models as a service (model.h): load a GGUF onto a backend and run it. Pass
   * `context` as each function's host_context. Never NULL in a host of ABI >= 0.1.
   * Ownership: the host's, valid for the life of the process. */
  const specd_model_api* models;
} specd_host;

/* True when the host table has field `field` (it was appended in a minor we know of). */
#define SPECD_HOST_HAS(host, field) \
  ((host)->struct_size >= offsetof(specd_host, field) + sizeof((host)->field))

SPECD_EXTERN_C_END

#endif /* SPECD_HOST_H */
