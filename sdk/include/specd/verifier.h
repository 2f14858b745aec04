/* specd ABI — verifiers.
 *
 * A verifier scores a draft tree in one pass: for the root (the last accepted token) and
 * every draft node it returns the next-token logits, and optionally its hidden features.
 * The standard verifier is the target model on a backend (built into the core); this
 * interface lets others exist (a remote model, a different runtime).
 *
 * Lifecycle, per sequence: create → begin → (verify → commit)* → destroy. All calls on one
 * verifier object are [same-thread].
 */
#ifndef SPECD_VERIFIER_H
#define SPECD_VERIFIER_H

#include <stddef.h>
#include <stdint.h>

#include "specd/draft.h"
#include "specd/host.h"
#include "specd/status.h"
#include "specd/types.h"

SPECD_EXTERN_C_BEGIN

typedef struct specd_verifier_info {
  uint32_t struct_size;
  uint32_t vocab_size;    /* logits per row */
  uint32_t hidden_dim;    /* width of hidden features; 0 = none offered */
  uint32_t context_length;/* most tokens a sequence may hold */
} specd_verifier_info;

typedef struct specd_verifier_vtable {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t flags; /* none defined in 0.1 */

  /* Creates a verifier from the [target] parameters and the model path.
   * Ownership: *out is the caller's, released with destroy. [main-thread] */
  specd_status* (*create)(const specd_host* host, const specd_params* params,
                          const char* model_path, void** out);
  /* Releases a verifier. NULL is allowed. [same-thread] */
  void (*destroy)(void* verifier);
  /* Fills `info` (caller-owned). [same-thread] */
  specd_status* (*info)(void* verifier, specd_verifier_info* info);

  /* Starts a sequence and processes tokens[0..n-1) (all but the last, which becomes the
   * first root). Writes their hidden features to `hidden` (caller-owned,
   * [n-1, hidden_dim]) when not NULL. [same-thread] */
  specd_status* (*begin)(void* verifier, const specd_token* tokens, uint32_t n, float* hidden);

  /* Scores `root` and the nodes of `tree` (borrowed) in one pass. Writes logits
   * (caller-owned, [(N+1), vocab_size], row 0 = root) and, when not NULL, hidden features
   * [(N+1), hidden_dim]. The rows stay pending until commit. [same-thread] */
  specd_status* (*verify)(void* verifier, specd_token root, const specd_draft_tree* tree,
                          float* logits, float* hidden);

  /* Keeps the root and the accepted nodes `path[0..n)` (borrowed; node ids of the last
   * verified tree, root-to-leaf) as the sequence's next tokens, drops the other pending
   * rows. [same-thread] */
  specd_status* (*commit)(void* verifier, const int32_t* path, uint32_t n);
} specd_verifier_vtable;

#if UINTPTR_MAX == UINT64_MAX
/* Layout of ABI 0.1 — frozen. */
SPECD_STATIC_ASSERT(offsetof(specd_verifier_vtable, create) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_verifier_vtable, commit) == 56, "frozen layout");
#endif

SPECD_EXTERN_C_END

#endif /* SPECD_VERIFIER_H */
