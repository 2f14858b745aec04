/* specd ABI — proposers (drafting strategies).
 *
 * A proposer drafts a tree of candidate tokens after the last accepted token (the root);
 * see draft.h for the tree. It is told what was accepted after every round and rolls its
 * own state back accordingly.
 *
 * Lifecycle, per sequence: create → begin → (propose → commit)* → [begin again for a new
 * sequence] → destroy. All calls on one proposer object are [same-thread]: made by the
 * thread that owns the object, one at a time.
 */
#ifndef SPECD_PROPOSER_H
#define SPECD_PROPOSER_H

#include <stddef.h>
#include <stdint.h>

#include "specd/draft.h"
#include "specd/host.h"
#include "specd/status.h"
#include "specd/types.h"

SPECD_EXTERN_C_BEGIN

/* Capability bits of a proposer (uint64_t). */
#define SPECD_PROPOSER_NEEDS_TARGET_HIDDEN ((uint64_t)1 << 0) /* wants target features */
#define SPECD_PROPOSER_PROVIDES_Q ((uint64_t)1 << 1)          /* can return q rows */
#define SPECD_PROPOSER_TREES ((uint64_t)1 << 2)               /* may return trees */

/* The run's sampling transform (temperature, top-k, top-p, min-p), offered by the host so
 * that the draft's q is transformed exactly as the target's p is. */
typedef struct specd_transform {
  uint32_t struct_size;
  uint32_t vocab_size;
  void* context; /* host-owned; pass back to apply */
  /* Turns `n` raw logits (borrowed) into probabilities written to `out` (caller-owned,
   * n doubles). n <= vocab_size; tokens beyond n are treated as impossible.
   * Thread rule: [same-thread] as the proposer call that received this struct. */
  specd_status* (*apply)(void* context, const float* logits, uint32_t n, double* out);
  double temperature; /* 0 = greedy: apply returns a one-hot row (lowest id on ties) */
} specd_transform;

/* What a proposer learns about the target when it is created. Borrowed for `create`;
 * copy what you keep. */
typedef struct specd_proposer_context {
  uint32_t struct_size;
  uint32_t vocab_size;     /* the target's vocabulary size */
  uint32_t hidden_dim;     /* width of target features (0 when the verifier offers none) */
  uint32_t max_nodes;      /* the host accepts at most this many draft nodes per round */
  const char* target_path; /* the target model file (for heads bound to a target): a file
                              system path as the host opened it, absolute or relative to
                              the working folder */
  /* [vocab_size] the target's token strings, for vocabulary checks: each exactly as stored
   * in the target GGUF's `tokenizer.ggml.tokens`, NOT the text the token decodes to. For
   * byte-level BPE vocabularies (tokenizer.ggml.model "gpt2": GPT-2, Llama 3, Qwen) every
   * byte is one of GPT-2's byte-to-unicode symbols, UTF-8 encoded ("\xC4\xA0" = "Ġ" for a
   * space); for SentencePiece ("llama") a space is "\xE2\x96\x81" ("▁") and a raw byte
   * token is "<0xNN>". Ids the tokenizer lacks (a padded output layer) are "". */
  const char* const* token_texts;
  uint32_t draft_length;   /* [proposer] k */
  uint32_t reserved;
} specd_proposer_context;

/* The host-owned buffers a proposer writes its draft into. */
typedef struct specd_draft_output {
  uint32_t struct_size;
  uint32_t capacity;           /* max nodes; tokens and parents hold this many */
  specd_token* tokens;         /* host-owned [capacity] */
  int32_t* parents;            /* host-owned [capacity] */
  double* q;                   /* host-owned [(capacity + 1) * vocab_size] */
  uint32_t n_nodes;            /* written by the proposer (0 = nothing to propose) */
  specd_sibling_scheme scheme; /* written by the proposer */
  specd_bool has_q;            /* written: 1 when rows of q were filled for every parent */
  uint32_t reserved;
} specd_draft_output;

typedef struct specd_proposer_vtable {
  uint32_t struct_size;
  uint32_t reserved;
  uint64_t flags; /* SPECD_PROPOSER_* bits */
  /* The acceptance rule used when the configuration names none (an id or name), e.g.
   * "rejection" for a proposer that samples from q. Static string. */
  const char* default_rule;

  /* Creates a proposer from its [proposer] parameters (the host removes kind, k, model and
   * backend and passes `model` through `model_path`, which may be NULL: a file system path,
   * already resolved against the configuration file's folder). `transform` and
   * `context` are borrowed for the call except `transform`, which stays valid until destroy.
   * Unknown parameters are an error naming the key and its location.
   * Ownership: *out is the caller's, released with destroy. [main-thread] */
  specd_status* (*create)(const specd_host* host, const specd_params* params,
                          const char* model_path, const specd_proposer_context* context,
                          const specd_transform* transform, void** out);

  /* Releases a proposer. NULL is allowed. [same-thread] */
  void (*destroy)(void* proposer);

  /* Starts a sequence: `tokens[0..n)` is the prompt (the last one is the first root).
   * `hidden` (borrowed, may be NULL) holds target features for tokens[0..n-1), row-major
   * [n-1, hidden_dim], when the proposer asked for them. [same-thread] */
  specd_status* (*begin)(void* proposer, const specd_token* tokens, uint32_t n,
                         const float* hidden);

  /* Drafts after the current root. `tokens[0..n)` (borrowed) is the whole accepted
   * sequence so far, root last. Writes the tree into `out`; randomness from `rng` through
   * the host table. [same-thread] */
  specd_status* (*propose)(void* proposer, const specd_token* tokens, uint32_t n,
                           specd_rng* rng, specd_draft_output* out);

  /* Tells the proposer the outcome of the round: `accepted[0..n_accepted)` are the tokens
   * of the accepted draft nodes in order and `next` is the token emitted after them (the
   * new root). `hidden` (borrowed, may be NULL) holds the target features of the old root
   * and the accepted nodes, [n_accepted + 1, hidden_dim]. [same-thread] */
  specd_status* (*commit)(void* proposer, const specd_token* accepted, uint32_t n_accepted,
                          specd_token next, const float* hidden);
} specd_proposer_vtable;

#if UINTPTR_MAX == UINT64_MAX
/* Layout of ABI 0.1 — frozen. */
SPECD_STATIC_ASSERT(offsetof(specd_transform, apply) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_proposer_context, target_path) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_draft_output, q) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_proposer_vtable, create) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_proposer_vtable, commit) == 56, "frozen layout");
#endif

SPECD_EXTERN_C_END

#endif /* SPECD_PROPOSER_H */
