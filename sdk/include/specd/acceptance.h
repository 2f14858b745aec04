/* specd ABI — acceptance rules.
 *
 * An acceptance rule walks a draft tree from the root, using the target distributions p
 * (and, if it needs them, the draft distributions q), and returns the accepted path plus
 * exactly one more token: the correction after a rejection, or the bonus token after full
 * acceptance. It also declares whether it preserves the target's output distribution (its
 * lossless label); `specd audit` measures that claim.
 *
 * Lifecycle: create → accept (any number) → destroy. A rule object is used by one thread
 * at a time ([same-thread] below means: the thread that currently owns the object); several
 * objects of one rule may live in different threads at once.
 */
#ifndef SPECD_ACCEPTANCE_H
#define SPECD_ACCEPTANCE_H

#include <stddef.h>
#include <stdint.h>

#include "specd/draft.h"
#include "specd/host.h"
#include "specd/status.h"
#include "specd/types.h"

SPECD_EXTERN_C_BEGIN

/* The lossless label a rule declares. */
typedef uint32_t specd_lossless_label;
/* The output distribution equals the target's at every temperature and transform. */
#define SPECD_LABEL_EXACT ((specd_lossless_label)1)
/* Equal to the target's greedy output at temperature 0 only; no claim otherwise. */
#define SPECD_LABEL_GREEDY_EXACT ((specd_lossless_label)2)
/* No guarantee: runs only when the configuration says allow_lossy = true. */
#define SPECD_LABEL_LOSSY ((specd_lossless_label)3)

/* Requirement and capability bits of a rule (uint64_t). */
#define SPECD_ACCEPT_NEEDS_Q ((uint64_t)1 << 0)         /* refuses trees without q */
#define SPECD_ACCEPT_SUPPORTS_TREES ((uint64_t)1 << 1)  /* else: chains only */
/* Which sibling schemes (draft.h) the rule has a proof for: bit (1 << scheme) << 8. */
#define SPECD_ACCEPT_SCHEME_BIT(scheme) ((uint64_t)1 << (8u + (scheme)))

/* One outcome of a round, as given to specd_acceptance_vtable.outcomes. */
typedef void (*specd_outcome_fn)(void* user, const int32_t* path, uint32_t path_length,
                                 specd_token next_token, double probability);

typedef struct specd_accept_result {
  uint32_t struct_size;
  uint32_t path_capacity; /* set by the caller: capacity of `path`, >= tree depth */
  int32_t* path;          /* caller-owned buffer; the rule writes the accepted node ids in
                             root-to-leaf order (each the child of the previous one) */
  uint32_t path_length;   /* written by the rule: number of accepted draft nodes */
  specd_token next_token; /* written by the rule: correction or bonus token */
} specd_accept_result;

typedef struct specd_acceptance_vtable {
  uint32_t struct_size;
  specd_lossless_label label;
  uint64_t flags; /* SPECD_ACCEPT_* bits */

  /* Creates a rule object from the [acceptance] parameters (the host removes `rule` and
   * `allow_lossy`). Unknown or invalid parameters must be reported as an error status whose
   * message names the key (its `location` says where it is in the file).
   * Ownership: *out_rule is owned by the caller and released with destroy. [main-thread] */
  specd_status* (*create)(const specd_host* host, const specd_params* params, void** out_rule);

  /* Releases a rule object. NULL is allowed. [same-thread] */
  void (*destroy)(void* rule);

  /* Runs one acceptance walk. `tree` and `target` are borrowed for the call; the host has
   * validated them (topological parents, tokens < vocab, rows summing to 1 within 1e-6,
   * q present when the rule needs it, a scheme the rule supports). All randomness comes from
   * host->rng_uniform(host->context, rng). Writes `result`. [same-thread] */
  specd_status* (*accept)(void* rule, const specd_draft_tree* tree,
                          const specd_target_dists* target, specd_rng* rng,
                          specd_accept_result* result);

  /* Optional (may be NULL): the exact probability of every outcome (accepted path, next
   * token) of `accept` for this tree, p and q, calling `emit` once per outcome with
   * probability > 0; the probabilities sum to 1. Used by exact checks and `specd audit`.
   * `emit` and `user` are the caller's; `path` passed to emit is valid during that call
   * only. [same-thread] */
  specd_status* (*outcomes)(void* rule, const specd_draft_tree* tree,
                            const specd_target_dists* target, specd_outcome_fn emit,
                            void* user);
} specd_acceptance_vtable;

#if UINTPTR_MAX == UINT64_MAX
/* Layout of ABI 0.1 — frozen. */
SPECD_STATIC_ASSERT(offsetof(specd_accept_result, path) == 8, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_accept_result, next_token) == 20, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_acceptance_vtable, flags) == 8, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_acceptance_vtable, create) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_acceptance_vtable, outcomes) == 40, "frozen layout");
#endif

SPECD_EXTERN_C_END

#endif /* SPECD_ACCEPTANCE_H */
