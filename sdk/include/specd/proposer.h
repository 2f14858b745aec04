/* specd ABI — proposers (drafting strategies).
 *
 * A proposer drafts a tree of candidate tokens after the last accepted token (the root);
 * see draft.h for the tree. It is told what was accepted after every round and rolls its
 * own state back accordingly.
 *
 * Two forms.
 * - Batched (ABI 0.5, SPECD_PROPOSER_BATCHED): one proposer object drafts for any number of
 *   sequences. Each sequence's state sits behind a handle (sequence_open); one propose_batch
 *   call drafts for several sequences at once, so a model-based proposer runs one batched
 *   pass per draft step over all of them instead of one pass per sequence. Lifecycle:
 *   create → (sequence_open → sequence_begin → (propose_batch → sequence_commit)* →
 *   [sequence_begin again for a new sequence] → sequence_close)* → destroy. The host drives
 *   `specd run` (a batch of one) and the server (every drafting sequence of a step) through
 *   this form.
 * - Per sequence (ABI 0.1): one object per sequence; create → begin → (propose → commit)*
 *   → [begin again] → destroy. The host runs such a proposer through an adapter: one object
 *   per sequence, propose called for each sequence of a step in turn.
 *
 * All calls on one proposer object, and on its sequences, are [same-thread]: made by the
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
/* ABI 0.5: implements the batched slots (sequence_open .. sequence_commit); the host then
 * never calls begin, propose or commit, which may be NULL. */
#define SPECD_PROPOSER_BATCHED ((uint64_t)1 << 3)

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
  uint32_t draft_length; /* [proposer] k */
  uint32_t reserved;
  /* ---- Appended in 0.6; read only when struct_size covers it --------------------------
   * The target's tokenizer (below), for proposers that draft in text; NULL when the host
   * has none. Host-owned, valid as long as the proposer object. */
  const struct specd_text_service* text;
} specd_proposer_context;

/* The target's tokenizer as a host service (specd_proposer_context.text). The table and its
 * context are host-owned and live as long as the proposer object. Both functions are
 * [same-thread] with the proposer call they are made from; pass `context` back to them. Every
 * pointer argument is the caller's: inputs borrowed for the call, outputs written in place.
 * Errors as statuses naming the problem (INVALID_ARGUMENT for a bad id or buffer), owned by
 * the caller and released with host->status_free. */
typedef struct specd_text_service {
  uint32_t struct_size;
  uint32_t reserved;
  void* context;
  /* The ids the target's tokenizer gives `length` bytes of `text` on their own: no BOS or
   * EOS, text that spells a control token stays text, and a SentencePiece vocabulary adds
   * its space prefix as it does for a prompt. Writes min(count, capacity) ids to `tokens`
   * (may be NULL when capacity is 0) and the count to *out_count: call again with room for
   * that many when it is larger. `text` is borrowed. */
  specd_status* (*encode)(void* context, const char* text, uint64_t length, specd_token* tokens,
                          uint32_t capacity, uint32_t* out_count);
  /* The bytes `count` ids stand for, concatenated as the host streams them (a token holding
   * part of a UTF-8 character gives its bytes; control tokens give none). Writes
   * min(length, capacity) bytes to `text` (not NUL-terminated) and the length to
   * *out_length. An id outside the tokenizer's vocabulary is refused. */
  specd_status* (*decode)(void* context, const specd_token* tokens, uint32_t count, char* text,
                          uint64_t capacity, uint64_t* out_length);
  /* ---- Appended after 0.6 (present when struct_size > offsetof(specd_text_service,
   * encode_with)) ---- */
  /* As encode, with `flags` (SPECD_ENCODE_*, OR-ed; 0 = encode): SPECD_ENCODE_BOS prepends
   * the BOS id when the vocabulary asks for one; SPECD_ENCODE_CONTINUATION reads `text` as
   * going on from earlier text, so a SentencePiece vocabulary adds no space prefix. */
  specd_status* (*encode_with)(void* context, const char* text, uint64_t length, uint32_t flags,
                               specd_token* tokens, uint32_t capacity, uint32_t* out_count);
} specd_text_service;

/* True when the host's text service has `field` (appended after 0.6: encode_with). A
 * capability rather than a minor, so test it before calling; specd::sdk::TextService's
 * has_flags() does. */
#define SPECD_TEXT_SERVICE_HAS(service, field)                                                 \
  ((service)->struct_size >= offsetof(specd_text_service, field) + sizeof((service)->field) && \
   (service)->field != NULL)

#define SPECD_ENCODE_BOS ((uint32_t)1)
#define SPECD_ENCODE_CONTINUATION ((uint32_t)2)

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

/* A constraint on one sequence's output (ABI 0.6): the grammar or JSON Schema a request gave
 * (the host masks every verified row of the target with it). A proposer that drafts from
 * logits may apply it to its own rows, so that its drafts stay inside the constraint and are
 * accepted more often; the q it reports must then be the masked distribution it drew from.
 * A proposer that ignores it stays exact: its refused tokens are rejected. Host-owned,
 * borrowed for the propose_batch call. */
typedef struct specd_token_filter {
  uint32_t struct_size;
  uint32_t reserved;
  void* context; /* the host's, passed back to apply */
  /* Sets to -infinity each entry of logits[0..n) (indexed by the target's token ids) that
   * the constraint refuses after the sequence's accepted tokens followed by
   * path[0..n_path) (draft tokens below the root, the root's child first). Returns 1 when
   * it masked the row (at least one entry is left), 0 when nothing may follow `path` (the
   * path leaves the constraint, or no token continues it): stop drafting below it.
   * `path` and `logits` are the caller's, borrowed for the call; `context` is the host's.
   * [same-thread: only during the propose_batch call that passed it] */
  int32_t (*apply)(void* context, const specd_token* path, uint32_t n_path, float* logits,
                   uint32_t n);
} specd_token_filter;

/* One sequence's part of a propose_batch call (ABI 0.5). Host-owned, borrowed for the call;
 * passed as an array of pointers, so later minors may append fields. */
typedef struct specd_propose_item {
  uint32_t struct_size;
  uint32_t n_tokens;         /* length of tokens */
  void* sequence;            /* the proposer's handle from sequence_open */
  const specd_token* tokens; /* [n_tokens] the whole accepted sequence so far, root last */
  specd_rng* rng;            /* this sequence's generator, through the host table */
  specd_draft_output* out;   /* this sequence's buffers; capacity may differ per item */
  specd_status* status;      /* NULL on entry; set by the proposer when this item failed */
  /* ABI 0.6 (present when struct_size covers it): the sequence's output constraint, NULL
   * when it has none. */
  const specd_token_filter* filter;
} specd_propose_item;

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
  specd_status* (*propose)(void* proposer, const specd_token* tokens, uint32_t n, specd_rng* rng,
                           specd_draft_output* out);

  /* Tells the proposer the outcome of the round: `accepted[0..n_accepted)` are the tokens
   * of the accepted draft nodes in order and `next` is the token emitted after them (the
   * new root). `hidden` (borrowed, may be NULL) holds the target features of the old root
   * and the accepted nodes, [n_accepted + 1, hidden_dim]. [same-thread] */
  specd_status* (*commit)(void* proposer, const specd_token* accepted, uint32_t n_accepted,
                          specd_token next, const float* hidden);

  /* ---- ABI 0.5: the batched form (SPECD_PROPOSER_BATCHED) --------------------------------
   * Present when struct_size covers them and the flag is set; the host then uses these
   * alone. */

  /* Makes the state of one more sequence. Ownership: *out_sequence is the proposer's
   * handle, released with sequence_close before destroy. [same-thread] */
  specd_status* (*sequence_open)(void* proposer, void** out_sequence);
  /* Releases a sequence's state. NULL is allowed. [same-thread] */
  void (*sequence_close)(void* proposer, void* sequence);
  /* begin, for one sequence: `tokens[0..n)` is its prompt (the last one is the first root),
   * `hidden` (borrowed, may be NULL) the target features of tokens[0..n-1). Also starts a
   * sequence afresh for a new prompt. [same-thread] */
  specd_status* (*sequence_begin)(void* proposer, void* sequence, const specd_token* tokens,
                                  uint32_t n, const float* hidden);
  /* Drafts for n_items sequences in one call (items and everything they point to are
   * borrowed for the call; each sequence appears at most once). For each item the proposer
   * writes its draft into item->out as `propose` would, or, when that sequence alone fails,
   * sets item->status to an error made with the host table (ownership passes to the host;
   * the other items still count). A returned status fails every item. The drafts of one
   * sequence must not depend on the other items (batch invariance: run model passes over
   * the batch in pieces the backend computes row by row invariantly, specd_model_info
   * invariant_max_rows), so a request's output does not depend on what shares its steps.
   * [same-thread] */
  specd_status* (*propose_batch)(void* proposer, specd_propose_item* const* items,
                                 uint32_t n_items);
  /* commit, for one sequence. [same-thread] */
  specd_status* (*sequence_commit)(void* proposer, void* sequence, const specd_token* accepted,
                                   uint32_t n_accepted, specd_token next, const float* hidden);
} specd_proposer_vtable;

#if UINTPTR_MAX == UINT64_MAX
/* Layout of ABI 0.1 — frozen. */
SPECD_STATIC_ASSERT(offsetof(specd_transform, apply) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_proposer_context, target_path) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_draft_output, q) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_proposer_vtable, create) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_proposer_vtable, commit) == 56, "frozen layout");
/* Layout of ABI 0.5 additions. */
SPECD_STATIC_ASSERT(offsetof(specd_propose_item, sequence) == 8, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_propose_item, status) == 40, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_propose_item, filter) == 48, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_token_filter, apply) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_proposer_context, text) == 40, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_text_service, decode) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_text_service, encode_with) == 32, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_proposer_vtable, sequence_open) == 64, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_proposer_vtable, sequence_commit) == 96, "frozen layout");
#endif

SPECD_EXTERN_C_END

#endif /* SPECD_PROPOSER_H */
