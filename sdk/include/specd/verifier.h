/* specd ABI — verifiers.
 *
 * A verifier scores a draft tree in one pass: for the root (the last accepted token) and
 * every draft node it returns the next-token logits, and optionally its hidden features.
 * The standard verifier is the target model on a backend (built into the core, behind this
 * same vtable); plugins named specd-verify-<name>.so provide others, chosen by
 * [verifier] kind (e.g. "remote": a `specd serve` instance over HTTP, docs/VERIFIERS.md).
 *
 * Parameters: the keys of [verifier] other than `kind`; model_path: [target] model (a
 * remote verifier reads no weights from it).
 * Strings: UTF-8. Errors: a status naming what failed (a remote verifier names its URL).
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
  uint32_t vocab_size;     /* logits per row */
  uint32_t hidden_dim;     /* width of hidden features; 0 = none offered */
  uint32_t context_length; /* most tokens a sequence may hold */
  /* ABI 0.3 (the host zeroes them before info; a 0.2 plugin leaves them 0): */
  /* Digest of the vocabulary the logits index (FNV-1a 64 over the token count and every
   * token text, as the host's tokenizer computes it); 0 = not known. The host refuses a
   * verifier whose digest differs from its own tokenizer's. */
  uint64_t vocab_digest;
  /* Seconds of the last verify call not spent computing logits (network round trip,
   * encoding, queueing on a server); 0 for a local verifier. Read after each verify by
   * k = "auto", whose cost model adds it to every round. */
  double last_overhead_s;
} specd_verifier_info;

typedef struct specd_verifier_vtable {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t flags; /* none defined in 0.1 */

  /* Creates a verifier from the [verifier] parameters and the [target] model path.
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
