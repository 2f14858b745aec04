/* specd ABI — the data of one speculative round: the draft tree a proposer returns and
 * the target distributions the verifier produces for it.
 *
 * A draft tree has nodes 1..N. Node 0 is the root: the last accepted token, which the
 * target has not processed yet. Nodes are stored at array index i-1 and are topologically
 * ordered: parent(i) < i. A chain is a tree in which node i's parent is i-1.
 *
 * Distributions are dense rows of `vocab_size` doubles over the target's vocabulary, after
 * the core's sampling transform (temperature, top-k, top-p, min-p). Row r belongs to node r
 * (0 = root) and is the distribution of the token that FOLLOWS node r: for the target, p
 * row r is the target's next-token distribution given the prefix and the path to r; for the
 * draft, q row r is the distribution the children of r were drawn from.
 *
 * Ownership: every pointer is borrowed; see each function for how long it stays valid.
 */
#ifndef SPECD_DRAFT_H
#define SPECD_DRAFT_H

#include <stddef.h>
#include <stdint.h>

#include "specd/types.h"

SPECD_EXTERN_C_BEGIN

/* How the children of one node were drawn. The acceptance rules' exactness proofs depend
 * on it, so a proposer states it and a rule refuses schemes it has no proof for. */
typedef uint32_t specd_sibling_scheme;
/* Tokens chosen deterministically (argmax, top-k by score, n-gram lookup, a fixed tree).
 * `q` may be absent; if present it is informational only. */
#define SPECD_SIBLINGS_DETERMINISTIC ((specd_sibling_scheme)1)
/* Each child token drawn independently from q[parent] (duplicates possible). A chain
 * sampled from q uses this scheme with one child per node. */
#define SPECD_SIBLINGS_IID ((specd_sibling_scheme)2)
/* Children drawn one after another from q[parent] renormalised without the tokens already
 * drawn (no duplicates). */
#define SPECD_SIBLINGS_WITHOUT_REPLACEMENT ((specd_sibling_scheme)3)

/* The scheme's name as configs, reports and error messages spell it ("deterministic", "iid",
 * "without-replacement"), or NULL for a value no ABI minor defines. A static string; no
 * allocation, callable from any thread. */
static inline const char* specd_sibling_scheme_name(specd_sibling_scheme scheme) {
  switch (scheme) {
    case SPECD_SIBLINGS_DETERMINISTIC:
      return "deterministic";
    case SPECD_SIBLINGS_IID:
      return "iid";
    case SPECD_SIBLINGS_WITHOUT_REPLACEMENT:
      return "without-replacement";
    default:
      return NULL;
  }
}

typedef struct specd_draft_tree {
  uint32_t struct_size;
  uint32_t n_nodes;            /* N >= 0; N == 0 means nothing was drafted */
  uint32_t vocab_size;         /* length of each q row */
  specd_sibling_scheme scheme; /* applies to every node's children */
  const specd_token* tokens;   /* [N] token of node i at index i-1 */
  const int32_t* parents;      /* [N] parent of node i at index i-1; 0 <= parent < i */
  /* [(N+1) * vocab_size] or NULL. Row r: the draft distribution the children of node r were
   * drawn from (transformed by the core's sampling transform). Rows of nodes without
   * children may hold anything. NULL for deterministic drafts. */
  const double* q;
} specd_draft_tree;

/* What the target says about a draft tree. */
typedef struct specd_target_dists {
  uint32_t struct_size;
  uint32_t n_rows; /* N + 1 */
  uint32_t vocab_size;
  const double* p; /* [(N+1) * vocab_size]; row r = target distribution after node r */
} specd_target_dists;

#if UINTPTR_MAX == UINT64_MAX
/* Layout of ABI 0.1 — frozen. */
SPECD_STATIC_ASSERT(offsetof(specd_draft_tree, tokens) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_draft_tree, q) == 32, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_target_dists, p) == 16, "frozen layout");
#endif

SPECD_EXTERN_C_END

#endif /* SPECD_DRAFT_H */
