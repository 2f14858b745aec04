/* specd ABI — models as a host service.
 *
 * Proposers that draft with a model (an independent draft model today; heads later) do not
 * link a runtime of their own: the host loads the GGUF file onto a backend and runs the
 * model written once in the core over that backend's ops. The plugin holds opaque handles.
 *
 * The table is reached through host->models (host.h). Ownership: the table is the host's
 * and outlives every plugin; models and caches are created and released through it.
 * Thread rule: a model and its caches are [same-thread] — used by one thread at a time,
 * the thread that owns the proposer that opened them.
 */
#ifndef SPECD_MODEL_H
#define SPECD_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "specd/status.h"
#include "specd/types.h"

SPECD_EXTERN_C_BEGIN

typedef struct specd_model specd_model;             /* opaque, host-owned */
typedef struct specd_model_cache specd_model_cache; /* opaque KV cache of one sequence */

typedef struct specd_model_info {
  uint32_t struct_size;
  uint32_t vocab_size;     /* logits per row */
  uint32_t hidden_dim;     /* width of hidden features */
  uint32_t context_length; /* the model's trained context */
  uint32_t invariant_max_rows; /* forward calls up to this many rows are batch invariant */
  uint32_t reserved;
  const char* name;         /* general.name; owned by the model, lives as long as it */
  const char* architecture; /* e.g. "llama"; owned by the model */
  const char* backend;      /* name of the backend it runs on; owned by the model */
} specd_model_info;

typedef struct specd_model_api {
  uint32_t struct_size;
  uint32_t reserved;

  /* Loads a llama-architecture GGUF onto `backend` ("cpu", "cuda", "hip", a backend id,
   * "auto", or NULL/"" for the proposer's configured backend: [proposer] backend, else the
   * target's) with `threads` workers (0 = the run's [engine] threads). `path` and `backend` are borrowed. Errors name the file.
   * Only valid while the host creates a proposer (inside its `create`), which is when the
   * host knows the run's backends and threads.
   * Ownership: *out is the caller's, released with close. [main-thread] */
  specd_status* (*open)(void* host_context, const char* path, const char* backend,
                        uint32_t threads, specd_model** out);
  /* Releases a model after its caches. NULL is allowed. [same-thread] */
  void (*close)(void* host_context, specd_model* model);
  /* Fills `info` (caller-owned). [same-thread] */
  specd_status* (*info)(void* host_context, const specd_model* model, specd_model_info* info);
  /* Checks that `model`'s vocabulary gives every id the same token as the target of this
   * run (padded sizes tolerated: extra trailing control/unused/padding tokens); else an
   * INVALID_ARGUMENT status naming the first difference. [same-thread] */
  specd_status* (*check_vocabulary)(void* host_context, const specd_model* model,
                                    const char* target_path);

  /* A KV cache for up to `max_tokens` rows. Ownership: *out is the caller's, released with
   * cache_free before the model is closed. [same-thread] */
  specd_status* (*cache_create)(void* host_context, specd_model* model, uint32_t max_tokens,
                                specd_model_cache** out);
  void (*cache_free)(void* host_context, specd_model_cache* cache);
  /* Rows committed in the cache. [same-thread] */
  uint32_t (*cache_size)(void* host_context, const specd_model_cache* cache);

  /* Runs m tokens (all arrays borrowed, length m). Row i sits at position positions[i] and
   * attends to the committed rows plus its ancestors in this batch: parents[i] is the
   * index of its parent row, or -1 when its parent is the last committed row. Writes
   * logits [m, vocab_size] (caller-owned) and, when not NULL, hidden [m, hidden_dim]. The
   * rows stay pending until commit. [same-thread] */
  specd_status* (*forward)(void* host_context, specd_model* model, specd_model_cache* cache,
                           const specd_token* tokens, const int32_t* positions,
                           const int32_t* parents, uint32_t m, float* logits, float* hidden);
  /* Keeps pending rows rows[0..n) (batch indices, each the child of the previous, the first
   * a child of the committed prefix) and drops the rest. [same-thread] */
  specd_status* (*commit)(void* host_context, specd_model* model, specd_model_cache* cache,
                          const int32_t* rows, uint32_t n);
  /* Keeps the first n committed rows and drops pending ones. [same-thread] */
  specd_status* (*truncate)(void* host_context, specd_model* model, specd_model_cache* cache,
                            uint32_t n);
} specd_model_api;

#if UINTPTR_MAX == UINT64_MAX
/* Layout of ABI 0.1 — frozen. */
SPECD_STATIC_ASSERT(offsetof(specd_model_info, name) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_api, open) == 8, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_api, truncate) == 80, "frozen layout");
#endif

SPECD_EXTERN_C_END

#endif /* SPECD_MODEL_H */
