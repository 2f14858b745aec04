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
struct specd_text_service;                          /* a tokenizer as a service (proposer.h) */

typedef struct specd_model_info {
  uint32_t struct_size;
  uint32_t vocab_size;         /* logits per row */
  uint32_t hidden_dim;         /* width of hidden features */
  uint32_t context_length;     /* the model's trained context */
  uint32_t invariant_max_rows; /* forward calls up to this many rows are batch invariant */
  uint32_t reserved;
  const char* name;         /* general.name; owned by the model, lives as long as it */
  const char* architecture; /* e.g. "llama"; owned by the model */
  const char* backend;      /* name of the backend it runs on; owned by the model */
  uint32_t head_count;      /* heads: Medusa's K (logit rows per feature row), 1 for EAGLE/MTP;
                             * 0 for a llama model */
  uint32_t input_dim;       /* heads: width of the target features they take; an EAGLE-3 head
                             * (input_dim != hidden_dim) takes them through head_encode. 0 from
                             * hosts before head_encode: read it as hidden_dim */
  /* Appended after 0.6 (present when struct_size covers them): */
  uint32_t block_size; /* DFlash: rows of one block pass (the root, then masks); 0 otherwise */
  int32_t mask_token;  /* DFlash: the token a block is filled with; -1 otherwise (0 from older
                        * hosts: read block_size first) */
} specd_model_info;

/* One sequence's rows in forward_batch (ABI 0.5). Borrowed for the call; passed as an array
 * of pointers, so later minors may append fields. */
typedef struct specd_model_batch_entry {
  uint32_t struct_size;
  uint32_t m;                /* rows, >= 1 */
  specd_model_cache* cache;  /* the sequence's cache (NULL for a Medusa head) */
  const specd_token* tokens; /* [m] (NULL for a Medusa head) */
  const int32_t* positions;  /* [m] (NULL for a Medusa head) */
  const int32_t* parents;    /* [m] as in forward (NULL for a Medusa head) */
  const float* features;     /* heads: [m, hidden_dim] as in head_forward; NULL otherwise */
  uint32_t first_logit_row;  /* llama models, and heads with a cache from hosts of minor
                                >= 7: logits for rows [first_logit_row, m) only (logits may
                                be NULL when that is none); Medusa and older hosts' heads: 0 */
  uint32_t reserved;         /* 0 */
  float* logits;             /* [m - first_logit_row, vocab_size] (Medusa [m, head_count,
                                vocab_size]) */
  float* hidden;             /* [m, hidden_dim] or NULL (Medusa: NULL) */
} specd_model_batch_entry;

typedef struct specd_model_api {
  uint32_t struct_size;
  uint32_t reserved;

  /* Loads a model GGUF of a supported architecture (llama, qwen2, qwen3, phi3) onto
   * `backend` ("cpu", "cuda", "hip", a backend id, "auto", or NULL/"" for the proposer's
   * configured backend: [proposer] backend, else the target's) with `threads` workers
   * (0 = the run's [engine] threads). `path` and `backend` are borrowed. Errors name the file.
   * Served only through the host table a proposer's `create` received (its context is the
   * proposer's run: backends, threads, KV type); through any other table it answers
   * SPECD_STATUS_UNSUPPORTED.
   * Ownership: *out is the caller's, released with close. [main-thread] */
  specd_status* (*open)(void* host_context, const char* path, const char* backend, uint32_t threads,
                        specd_model** out);
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
  /* Keeps the first n committed rows and drops pending ones. A model with sliding-window
   * layers keeps those layers' rows only near the end of the cache (the window and 80 rows
   * more): an n that needs rows it gave back returns SPECD_STATUS_UNSUPPORTED, changing
   * nothing; n = 0 always succeeds. [same-thread] */
  specd_status* (*truncate)(void* host_context, specd_model* model, specd_model_cache* cache,
                            uint32_t n);

  /* ---- Draft heads bound to the target (train/FORMATS.md, sections 3-6) ---------------
   * A head is a specd_model whose general.architecture is specd-medusa, specd-eagle or
   * specd-mtp; close, info, cache_create (EAGLE/MTP only), cache_free, cache_size, commit
   * and truncate apply to it, forward does not (use head_forward). */

  /* Loads the head at `path` with the parts of the target at `target_path` it uses (the
   * target's token_embd, output_norm and output), onto `backend` with `threads` as in open.
   * A head whose specd.target.digest (or, without one, specd.target.name) does not match
   * that target is refused with INVALID_ARGUMENT naming both files, names and digests.
   * An EAGLE-3 head in llama.cpp's layout (general.architecture "eagle3") names no target:
   * it is refused when its target_hidden_size, target_layers or vocabulary do not fit. It
   * takes the inputs of its eagle3.target_layers, concatenated, as target features: the
   * host asks the target for those when the file is the run's [proposer] model.
   * A DFlash block drafter (general.architecture "dflash", llama.cpp's layout) is bound the
   * same way (dflash.target_layers) and reads the target's token_embd and output. Its
   * forward_batch entries are of two kinds, one kind per call, both pending until commit:
   * fused target features (head_encode) with positions and chain parents and no tokens,
   * written as K/V rows of every layer at those positions; or block rows (tokens: the root,
   * then mask_token) with positions and chain parents and no features, each attending to
   * the committed rows and to every row of its entry, writing logits [m, vocab].
   * `path`, `target_path` and `backend` are borrowed. Only valid inside a proposer's create.
   * Ownership: *out is the caller's, released with close. [main-thread] */
  specd_status* (*head_open)(void* host_context, const char* path, const char* target_path,
                             const char* backend, uint32_t threads, specd_model** out);
  /* Runs a head on m rows of target features (`features` [m, hidden_dim], the target's
   * last hidden state BEFORE its final norm, as proposers receive it). All inputs borrowed,
   * outputs caller-owned.
   * Medusa: `cache`, `tokens`, `positions`, `parents` and `hidden` must be NULL; writes
   * logits [m, head_count, vocab_size]: row i, head N predicts the token N+2 places after
   * the token whose feature is row i.
   * EAGLE/MTP: row i is the head element (features[i], tokens[i]) at RoPE position
   * positions[i] (tokens[i] is the token that follows the feature's position); parents[i] is
   * -1 when its parent is the last committed element, else the index of a pending element:
   * pending elements accumulate over calls until commit/truncate (those of earlier calls
   * first, then this call's rows), so a draft tree may grow one level per call. Writes
   * logits [m, vocab_size] (the prediction of the token after tokens[i]) and, when not NULL,
   * hidden [m, hidden_dim]: the element's output feature, the input feature of its children.
   * commit keeps a path of pending elements (indices as above).
   * EAGLE-3: `features` are head features (head_encode's output, or a parent's `hidden`);
   * with a draft vocabulary (its d2t table), logits of target tokens outside it are -inf.
   * [same-thread] */
  specd_status* (*head_forward)(void* host_context, specd_model* head, specd_model_cache* cache,
                                const float* features, const specd_token* tokens,
                                const int32_t* positions, const int32_t* parents, uint32_t m,
                                float* logits, float* hidden);

  /* ---- ABI 0.2 (present when struct_size > offsetof(specd_model_api, forward_rows)) ---- */

  /* forward, with logits computed and written for rows [first_logit_row, m) only, as
   * [m - first_logit_row, vocab_size]; first_logit_row = m computes none (`logits` may then
   * be NULL). A prefill that needs only its last row's logits passes m - 1, and neither the
   * device nor the caller holds an [m, vocab_size] buffer. first_logit_row > m is an
   * INVALID_ARGUMENT error. Otherwise as forward. [same-thread] */
  specd_status* (*forward_rows)(void* host_context, specd_model* model, specd_model_cache* cache,
                                const specd_token* tokens, const int32_t* positions,
                                const int32_t* parents, uint32_t m, uint32_t first_logit_row,
                                float* logits, float* hidden);

  /* ---- ABI 0.5 (present when struct_size > offsetof(specd_model_api, forward_batch)) ---- */

  /* forward_rows (llama models) or head_forward (heads) for several sequences in one pass:
   * entry e runs on its own cache (no two entries share one; Medusa's caches are NULL) with
   * its own rows, exactly as that call alone would, and the weights are read once for all
   * of them. Batch invariance: an entry of m <= specd_model_info.invariant_max_rows rows
   * gets the same logits and hidden rows, bit for bit, whatever the other entries are
   * (split longer chains into such pieces when a sequence's result must not depend on the
   * batch). `entries` and what they point to are borrowed; outputs caller-owned.
   * [same-thread] */
  specd_status* (*forward_batch)(void* host_context, specd_model* model,
                                 const specd_model_batch_entry* const* entries, uint32_t n);

  /* ---- ABI 0.6, appended (present when struct_size > offsetof(specd_model_api,
   * head_encode)) ---- */

  /* Fuses m rows of target features [m, input_dim] (borrowed) into head features
   * [m, hidden_dim] (caller-owned), what head_forward takes: an EAGLE-3 head's fc
   * projection, a DFlash drafter's fc projection and encoder norm. Rows are fused independently (a
   * row's bits do not depend on m). Heads whose input_dim equals hidden_dim (but DFlash) answer
   * UNSUPPORTED. [same-thread] */
  specd_status* (*head_encode)(void* host_context, specd_model* head, const float* target_features,
                               uint32_t m, float* features);

  /* ---- Appended after 0.6 (present when struct_size > offsetof(specd_model_api, text)) */

  /* The tokenizer of a llama model (`model`'s own vocabulary, which may differ from the
   * target's) as a text service (proposer.h), for drafting across vocabularies. *out is the
   * model's and lives as long as it; its functions are [same-thread] like the model's.
   * Heads answer UNSUPPORTED (they share the target's vocabulary: use the proposer context's
   * text). [same-thread] */
  specd_status* (*text)(void* host_context, const specd_model* model,
                        const struct specd_text_service** out);
} specd_model_api;

#if UINTPTR_MAX == UINT64_MAX
/* Layout of ABI 0.1 — frozen. */
SPECD_STATIC_ASSERT(offsetof(specd_model_info, name) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_api, open) == 8, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_api, truncate) == 80, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_info, head_count) == 48, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_api, head_open) == 88, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_api, head_forward) == 96, "frozen layout");
/* Layout of ABI 0.2 — frozen. */
SPECD_STATIC_ASSERT(offsetof(specd_model_api, forward_rows) == 104, "frozen layout");
/* Layout of ABI 0.5 — frozen. */
SPECD_STATIC_ASSERT(offsetof(specd_model_batch_entry, cache) == 8, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_batch_entry, first_logit_row) == 48, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_batch_entry, hidden) == 64, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_api, forward_batch) == 112, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_info, input_dim) == 52, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_api, head_encode) == 120, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_api, text) == 128, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_model_info, mask_token) == 60, "frozen layout");
#endif

SPECD_EXTERN_C_END

#endif /* SPECD_MODEL_H */
