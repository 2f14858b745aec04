/* specd ABI — hardware backends: devices, buffers and the op set models are written over.
 *
 * A backend plugin (SPECD_KIND_BACKEND) returns a `specd_backend_vtable` from get_vtable.
 * The host first asks `score`; 0 means the backend cannot run on this machine (no GPU, no
 * driver) and comes with a reason the host shows the user. `backend = "auto"` picks the
 * highest score. The host then opens a device, allocates buffers on it, uploads weights and
 * runs ops. Models (core/models) are written once over these ops.
 *
 * Data model.
 * - A buffer is an opaque handle to device memory of a fixed byte size. The host never
 *   dereferences it; it moves bytes with upload / download / copy.
 * - A view (specd_view) is a 2-D row-major window into a buffer: `rows` rows of `cols`
 *   elements of one dtype, each row contiguous, rows `row_stride` bytes apart. Every op
 *   argument is a view. Quantized rows (q8_0 and the 0.2 block types) hold whole blocks;
 *   cols must then be a multiple of the type's block size (32 or 256). Index arguments
 *   (token ids, positions, row indices, masks) are int32
 *   views in device buffers too, so a device never has to read host memory inside an op.
 * - Dtype ids equal ggml's type ids, so GGUF tensor data is uploaded unchanged.
 *
 * Execution. Ops on one device run in the order they are called and may run asynchronously
 * with the host: results are visible to the host after `download` (which waits for
 * everything before it) or `synchronize`. An op's inputs may be released or overwritten by
 * the host only after a later download/synchronize has returned. Outputs may alias inputs
 * only where an op says so.
 *
 * Errors: functions return NULL or a specd_status* made with the host table passed to
 * device_open (ownership passes to the caller). A bad shape or dtype is
 * SPECD_STATUS_INVALID_ARGUMENT, a valid but unimplemented combination is
 * SPECD_STATUS_UNSUPPORTED; the message names the op and the offending argument.
 *
 * Threads. `score` and `device_open` are [main-thread]. A device and everything created on
 * it are [same-thread]: used by one thread at a time (the thread that owns the device);
 * distinct devices may be used from distinct threads concurrently. A backend may run its
 * own worker threads inside an op.
 *
 * Batch invariance (contract of every op for m <= specd_device_info.invariant_max_rows rows;
 * a device declaring 0 makes no such promise). Row i of an op's output is a deterministic function
 * of row i's inputs only: the same bits whatever the number of rows m in the call, the row's
 * position in the batch, the other rows' contents and the device's thread count. For
 * `matmul` each output element is one reduction over k in a fixed order; for `attention`
 * a query row's result depends only on the sequence of (key, value) rows it attends, in
 * logical order (prefix rows first, then its extra slots in the order given), never on
 * where other rows' keys are. Hence verifying k+1 draft tokens in one pass gives the
 * same logits, bit for bit, as decoding them one at a time, and greedy speculative
 * decoding is token-for-token identical to plain decoding. Above `invariant_max_rows`
 * (prefill) a backend may use a faster library path whose rounding differs.
 */
#ifndef SPECD_BACKEND_H
#define SPECD_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "specd/host.h"
#include "specd/status.h"
#include "specd/types.h"

SPECD_EXTERN_C_BEGIN

/* Element types (ggml type ids). */
typedef uint32_t specd_dtype;
#define SPECD_DTYPE_F32 ((specd_dtype)0)
#define SPECD_DTYPE_F16 ((specd_dtype)1)  /* IEEE binary16 */
#define SPECD_DTYPE_Q8_0 ((specd_dtype)8) /* blocks of 32: f16 scale d, then 32 int8 q; x = d*q */
#define SPECD_DTYPE_I32 ((specd_dtype)26)
#define SPECD_DTYPE_BF16 ((specd_dtype)30)
/* Since ABI 0.2: llama.cpp's block-quantized weight types (matmul w, get_rows table,
 * copy_rows). A row of `cols` elements is cols / B blocks of S bytes, cols a multiple of B
 * ("B / S" below); f16 fields are IEEE binary16, all fields little-endian, nibble i of a
 * 32-element block is the low nibble of byte i % 16 for i < 16, else the high one. The exact
 * layouts and f32 formulas are those of llama.cpp (ggml-common.h, gguf-py quants.py), written
 * out in specd/cpp/ggml_blocks.hpp, whose decoders backends may use. */
#define SPECD_DTYPE_Q4_0 ((specd_dtype)2)    /* 32 / 18: d, 16 B nibbles; d*(q-8) */
#define SPECD_DTYPE_Q4_1 ((specd_dtype)3)    /* 32 / 20: d, m, 16 B nibbles; d*q + m */
#define SPECD_DTYPE_Q5_0 ((specd_dtype)6)    /* 32 / 22: d, u32 5th bits, 16 B; d*(q-16) */
#define SPECD_DTYPE_Q5_1 ((specd_dtype)7)    /* 32 / 24: d, m, u32 5th bits, 16 B; d*q + m */
#define SPECD_DTYPE_Q2_K ((specd_dtype)10)   /* 256 / 84: 4-bit scale/min, 2-bit q, d, dmin */
#define SPECD_DTYPE_Q3_K ((specd_dtype)11)   /* 256 / 110: 3rd bits, 2-bit q, 6-bit scales, d */
#define SPECD_DTYPE_Q4_K ((specd_dtype)12)   /* 256 / 144: d, dmin, 6-bit scale/min, nibbles */
#define SPECD_DTYPE_Q5_K ((specd_dtype)13)   /* 256 / 176: q4_K plus a 32 B 5th-bit plane */
#define SPECD_DTYPE_Q6_K ((specd_dtype)14)   /* 256 / 210: 4+2-bit q, 16 int8 scales, d */
#define SPECD_DTYPE_IQ4_NL ((specd_dtype)20) /* 32 / 18: d, nibbles index 16 fixed levels */
#define SPECD_DTYPE_IQ4_XS ((specd_dtype)23) /* 256 / 136: d, 6-bit scales, level nibbles */
/* An added constant, the minor unchanged: a backend that does not list it refuses its views. */
#define SPECD_DTYPE_MXFP4 ((specd_dtype)39) /* 32 / 17: E8M0 scale byte, E2M1 nibbles */

/* Opaque device memory, created by buffer_alloc / buffer_wrap_host, released by buffer_free. */
typedef struct specd_buffer specd_buffer;

/* A 2-D window into a buffer. Passed by const pointer, borrowed for the call only. */
typedef struct specd_view {
  uint32_t struct_size;
  specd_dtype dtype;
  specd_buffer* buffer; /* borrowed; the device's */
  uint64_t offset;      /* bytes from the start of the buffer to row 0 */
  int64_t rows;         /* >= 0 */
  int64_t cols;         /* elements per row, >= 1 (a multiple of the block size if quantized) */
  int64_t row_stride;   /* bytes from one row to the next, >= the row's byte size */
} specd_view;

/* Attention mask of m query rows over a KV cache, compactly: query row i attends cache rows
 * [0, prefix_len[i]) and then the cache rows extra_slots[extra_begin[i] .. extra_begin[i+1])
 * in that order (each >= prefix_len[i], strictly increasing). That is its whole key sequence,
 * in logical order. A causal chain appended at rows P..P+m-1 is prefix_len[i] = P + i + 1
 * with no extras; a draft tree appended at P..P+m-1 gives node i prefix_len P and as extras
 * the slots of its ancestors in root-to-node order followed by its own slot. Each row must
 * attend at least one key. */
typedef struct specd_attention_mask {
  uint32_t struct_size;
  uint32_t reserved;             /* 0 */
  const specd_view* prefix_len;  /* int32 [1, m] */
  const specd_view* extra_begin; /* int32 [1, m + 1]; extra_begin[0] = 0 */
  const specd_view* extra_slots; /* int32 [1, extra_begin[m]]; NULL when that is 0 */
} specd_attention_mask;

/* Shape of an attention op. Query row r holds n_head heads of head_dim values; a key/value
 * cache row holds n_head_kv heads. Query head h reads cache head h / (n_head / n_head_kv).
 * ABI 0.1 ends at `scale`: a reader uses the later fields only when struct_size covers them,
 * and the host never hands a 0.8 field to an older backend. Zeroed 0.8 fields mean what the
 * earlier minors meant. */
typedef struct specd_attention_params {
  uint32_t struct_size;
  uint32_t n_head;
  uint32_t n_head_kv; /* divides n_head */
  uint32_t head_dim;
  float scale; /* scores are scale * dot(q, k), usually 1 / sqrt(head_dim) */
  /* ABI 0.8 */
  /* A sliding window (gpt-oss, Gemma, Mistral's SWA layers): > 0, each query row attends only
   * the last `window` keys of its key sequence (specd_attention_mask: its sequence is its
   * positions 0.., so a row at position p attends positions p - window + 1 .. p, as
   * llama.cpp's standard SWA); 0 = every key. */
  uint32_t window;
  /* Attention sinks (gpt-oss): NULL, or f32 [1, n_head] in a device buffer: head h's softmax
   * has one more term, exp(sinks[0, h]), in its denominator (a key whose value is zero), so
   * out = sum_j e^(s_j - M) v_j / (sum_j e^(s_j - M) + e^(sink - M)), M the largest of the
   * scores and the sink. Borrowed for the call, like every view an op receives. */
  const specd_view* sinks;
} specd_attention_params;

/* Paged KV (ABI 0.5). A KV pool holds the cache rows of many sequences in blocks of
 * `block_rows` rows. Query row i of an attention_paged call belongs to a sequence whose
 * blocks are listed at block_table[table_begin[i] ..]: that sequence's logical cache row s
 * (the slots of specd_attention_mask) is pool row
 *   block_table[table_begin[i] + s / block_rows] * block_rows + s % block_rows.
 * Rows of several sequences may share one call, each with its own table. */
typedef struct specd_kv_pages {
  uint32_t struct_size;
  uint32_t block_rows;           /* rows per block, >= 1 */
  const specd_view* block_table; /* int32 [1, n]: block ids, each in [0, pool rows / block_rows) */
  const specd_view* table_begin; /* int32 [1, m]: where row i's table starts in block_table */
} specd_kv_pages;

/* RoPE modes (ABI 0.2; the values are ggml's rope types). */
#define SPECD_ROPE_NORMAL ((uint32_t)0) /* pairs (2j, 2j+1): llama, mistral */
#define SPECD_ROPE_NEOX ((uint32_t)2)   /* pairs (j, j + n_rot/2): qwen2, qwen3, phi3 */

/* Shape of a RoPE op. For each head, pair j (0 <= j < n_rot/2) is rotated by the angle
 *   pos * freq_scale * base^(-2j / n_rot) / freq_factors[0, j]
 * (freq_scale 1 and freq_factors 1 unless given); in SPECD_ROPE_NORMAL mode pair j is the
 * elements (2j, 2j+1) of the head, in SPECD_ROPE_NEOX mode (j, j + n_rot/2). A pair (a, b)
 * becomes (a cos - b sin, a sin + b cos); elements at n_rot and beyond pass through unchanged.
 * ABI 0.1 ends at `base` (normal mode, no scaling): a reader uses the later fields only when
 * struct_size covers them, and the host never hands a 0.2 field to a 0.1 backend. Zeroed
 * 0.2 fields mean what 0.1 meant. */
typedef struct specd_rope_params {
  uint32_t struct_size;
  uint32_t n_head;   /* heads per row: cols = n_head * head_dim */
  uint32_t head_dim; /* even */
  uint32_t n_rot;    /* even, <= head_dim */
  float base;        /* theta base, e.g. 10000 */
  /* ABI 0.2 */
  uint32_t mode;     /* SPECD_ROPE_NORMAL or SPECD_ROPE_NEOX */
  float freq_scale;  /* multiplies every angle (linear rope scaling: 1 / factor); 0 or 1 = none */
  uint32_t reserved; /* 0 */
  /* NULL, or f32 [1, n_rot / 2] in a device buffer, each > 0 (llama 3.1's rope_freqs):
   * borrowed for the call, like every view an op receives. */
  const specd_view* freq_factors;
  /* ABI 0.8: YaRN (gpt-oss, Qwen long context), as ggml's rope_ext computes it. With
   * ext_factor != 0, pair j's angle is theta_i (1 - r_j) + theta_e r_j, where theta_e is the
   * angle above without freq_scale, theta_i = freq_scale theta_e and
   *   r_j = ext_factor (1 - clamp((j - lo) / max(0.001, hi - lo), 0, 1)),
   *   lo = max(0, floor(c(beta_fast))), hi = min(n_rot - 1, ceil(c(beta_slow))),
   *   c(b) = n_rot ln(n_ctx_orig / (2 pi b)) / (2 ln base),
   * and cos and sin are multiplied by attn_factor (1 + 0.1 ln(1 / freq_scale)); with
   * ext_factor 0 by attn_factor alone. attn_factor 0 means 1, so zeroed fields mean what 0.2
   * meant. */
  float ext_factor;
  float attn_factor;
  float beta_fast;
  float beta_slow;
  uint32_t n_ctx_orig; /* the context the model was trained for (YaRN's original context) */
  uint32_t reserved2;  /* 0 */
} specd_rope_params;

/* Recurrent state (ABI 0.7). A recurrent op reads and writes per-sequence states kept in a
 * state pool: a view of `slots` rows, one state per row ("slot"), that the host allocates,
 * zeroes for a new sequence and never interprets. Row i of the op's call starts from the
 * state in slot state_in[0, i], or, when that is -1, from the state row i - 1 left (i > 0);
 * after row i, its state is written to slot state_out[0, i] unless that is -1. Rows run in
 * the order given: a slot written by an earlier row of the call is read with that write, so
 * a chain needs state_in only at its first row, and a draft tree gives each node's row its
 * parent's output slot. A slot that a row reads may be the one it writes (the state is read
 * before it is written). Rows of different sequences may share a call; they never read each
 * other's slots. */
typedef struct specd_recurrent_rows {
  uint32_t struct_size;
  uint32_t reserved;           /* 0 */
  const specd_view* state_in;  /* int32 [1, m]: slot, or -1 (row 0: never -1) */
  const specd_view* state_out; /* int32 [1, m]: slot, or -1 (not written) */
} specd_recurrent_rows;

/* Shape of a gated DeltaNet layer (Qwen3-Next, Qwen3.5; llama.cpp's ggml_ssm_conv,
 * ggml_l2_norm and ggml_gated_delta_net in sequence). H_k key heads and H_v value heads
 * (H_v a multiple of H_k) of S values each; C = 2 H_k S + H_v S conv channels. */
typedef struct specd_delta_net_params {
  uint32_t struct_size;
  uint32_t n_key_heads;   /* H_k */
  uint32_t n_value_heads; /* H_v; value head h reads key head h % H_k */
  uint32_t head_dim;      /* S: the size of a key head and of a value head */
  uint32_t conv_kernel;   /* K: taps of the causal convolution, >= 2 */
  float eps;              /* the L2 norm's floor */
} specd_delta_net_params;

typedef struct specd_device_params {
  uint32_t struct_size;
  uint32_t device_index; /* which device of this backend (GPU ordinal); 0 for the CPU */
  uint32_t threads;      /* worker threads; 0 = the backend's choice (all cores) */
  uint32_t reserved;     /* 0 */
} specd_device_params;

typedef struct specd_device_info {
  uint32_t struct_size;
  uint32_t threads;            /* worker threads in use */
  uint64_t memory_bytes;       /* device memory; 0 if unknown */
  uint32_t invariant_max_rows; /* largest m with the batch-invariance contract: 0 (none) or
                                * >= 64. The one signal of the contract. */
  uint32_t reserved;
  char name[64]; /* human-readable, NUL-terminated, e.g. "cpu (2 threads, avx512)" */
} specd_device_info;

/* Capability bits of a backend (uint64_t). Bit 0 is retired: up to 0.6 it was
 * SPECD_BACKEND_BATCH_INVARIANT, which duplicated invariant_max_rows and no host read. */
#define SPECD_BACKEND_HOST_MEMORY ((uint64_t)1 << 1) /* buffers live in host memory */

typedef struct specd_backend_vtable {
  uint32_t struct_size;
  uint32_t reserved; /* 0 */
  uint64_t flags;    /* SPECD_BACKEND_* bits */

  /* ---- Backend ---------------------------------------------------------------------------
   * Can this backend run here? Writes *out_score: 0 = no (then *out_reason says why, e.g.
   * "no CUDA device: driver version is insufficient"), otherwise a preference (CPU: 1, GPUs:
   * higher). *out_reason is set to a NUL-terminated string owned by the library, valid until
   * the plugin's deinit; it may be "" when the score is > 0. Never crashes for a missing
   * device. [main-thread] */
  specd_status* (*score)(const specd_host* host, uint32_t* out_score, const char** out_reason);

  /* Opens a device. `host` outlives the device; `params` is borrowed for the call.
   * Ownership: *out_device is the caller's, released with device_close. [main-thread] */
  specd_status* (*device_open)(const specd_host* host, const specd_device_params* params,
                               void** out_device);

  /* Closes a device after all its buffers were freed. NULL is allowed. [same-thread] */
  void (*device_close)(void* device);

  /* Fills `info` (caller-owned; the backend writes at most info->struct_size bytes).
   * [same-thread] */
  specd_status* (*device_info)(void* device, specd_device_info* info);

  /* Waits until every op issued on the device has finished. [same-thread] */
  specd_status* (*synchronize)(void* device);

  /* ---- Buffers ---------------------------------------------------------------------------
   * Allocates `size` bytes (contents undefined), aligned to at least 64 bytes.
   * Ownership: *out is the caller's, released with buffer_free. [same-thread] */
  specd_status* (*buffer_alloc)(void* device, uint64_t size, specd_buffer** out);

  /* Releases a buffer. NULL is allowed. [same-thread] */
  void (*buffer_free)(void* device, specd_buffer* buffer);

  /* Copies `size` bytes from host memory `src` (borrowed for the call: the copy is done or
   * staged before returning) to the buffer at `offset`. [same-thread] */
  specd_status* (*buffer_upload)(void* device, specd_buffer* dst, uint64_t offset, const void* src,
                                 uint64_t size);

  /* Waits for pending ops, then copies `size` bytes at `offset` into host memory `dst`
   * (caller-owned). [same-thread] */
  specd_status* (*buffer_download)(void* device, const specd_buffer* src, uint64_t offset,
                                   void* dst, uint64_t size);

  /* Device-side copy of `size` bytes; the ranges may overlap (memmove). [same-thread] */
  specd_status* (*buffer_copy)(void* device, specd_buffer* dst, uint64_t dst_offset,
                               const specd_buffer* src, uint64_t src_offset, uint64_t size);

  /* Optional (NULL allowed; only backends with SPECD_BACKEND_HOST_MEMORY): makes a
   * read-only buffer of `size` bytes that refers to host memory `data` without copying
   * (e.g. weights in a memory-mapped GGUF). `data` is borrowed and must stay valid and
   * unchanged until buffer_free; the buffer must never be an op's output. Ownership: *out is
   * the caller's. [same-thread] */
  specd_status* (*buffer_wrap_host)(void* device, const void* data, uint64_t size,
                                    specd_buffer** out);

  /* ---- Ops -------------------------------------------------------------------------------
   * All view pointers are borrowed for the call. Unless stated, activations are f32.
   *
   * GEMM: y[m, n] = x[m, k] · w[n, k]ᵀ. x f32 [m, k]; w f32/f16/bf16/q8_0 [n, k] (GGUF
   * layout of a [out, in] matrix); y f32 [m, n]. y must not overlap x or w. Since 0.2 w may
   * also be any block type above (a backend without one returns SPECD_STATUS_UNSUPPORTED);
   * the product uses the exactly dequantized weights. [same-thread] */
  specd_status* (*matmul)(void* device, const specd_view* x, const specd_view* w,
                          const specd_view* y);

  /* RMSNorm: y[i, :] = x[i, :] / sqrt(mean(x[i, :]²) + eps) * weight[0, :].
   * x, y f32 [m, n]; weight f32 [1, n]. y may equal x (in place). [same-thread] */
  specd_status* (*rms_norm)(void* device, const specd_view* x, const specd_view* weight, float eps,
                            const specd_view* y);

  /* RoPE in place on x f32 [m, n_head * head_dim]; row i rotated at position
   * positions[0, i] (int32 [1, m]). [same-thread] */
  specd_status* (*rope)(void* device, const specd_view* x, const specd_view* positions,
                        const specd_rope_params* params);

  /* Embedding gather: y[i, :] = table[ids[0, i], :] converted to f32. table
   * f32/f16/bf16/q8_0 (since 0.2 any block type) [V, d], dequantized exactly; ids int32
   * [1, m], each in [0, V) (else INVALID_ARGUMENT);
   * y f32 [m, d]. [same-thread] */
  specd_status* (*get_rows)(void* device, const specd_view* table, const specd_view* ids,
                            const specd_view* y);

  /* Attention: for each query row i and head h, softmax over the keys the mask lets row i
   * attend (see specd_attention_mask) of scale · q·k, times the values. q f32
   * [m, n_head * head_dim]; k_cache, v_cache f32 [capacity, n_head_kv * head_dim] (every
   * attended slot < capacity); out f32 [m, n_head * head_dim], not overlapping the inputs.
   * [same-thread] */
  specd_status* (*attention)(void* device, const specd_view* q, const specd_view* k_cache,
                             const specd_view* v_cache, const specd_attention_mask* mask,
                             const specd_attention_params* params, const specd_view* out);

  /* SwiGLU: y = silu(gate) * up elementwise, silu(g) = g / (1 + exp(-g)). All f32 [m, n];
   * y may equal gate or up. [same-thread] */
  specd_status* (*swiglu)(void* device, const specd_view* gate, const specd_view* up,
                          const specd_view* y);

  /* y = a + b elementwise, all f32 [m, n]; y may equal a or b. Since ABI 0.2 b may also be
   * one row [1, n], added to every row of a (a bias): y[i, :] = a[i, :] + b[0, :]; y may then
   * equal a. The host uses that form only with backends of minor >= 2. [same-thread] */
  specd_status* (*add)(void* device, const specd_view* a, const specd_view* b, const specd_view* y);

  /* Row gather for KV compaction: dst[i, :] = src[indices[0, i], :] for i = 0..m-1, bytes
   * copied verbatim (any dtype; src and dst have the same dtype and cols). indices int32
   * [1, m]. src and dst may be the same rows of one buffer when indices are increasing and
   * every indices[i] >= dst's row i in src's numbering (compaction towards the front):
   * rows are then moved in increasing i. [same-thread] */
  specd_status* (*copy_rows)(void* device, const specd_view* src, const specd_view* indices,
                             const specd_view* dst);

  /* Retired slots (0.1-0.6 named them softmax and argmax): never called by the host, which
   * transforms logits itself in one code path for p and q (docs/ABI-1.0.md). Leave them
   * NULL; they keep their place in the 0.x layout and leave it at 1.0. */
  void (*retired_softmax)(void);
  void (*retired_argmax)(void);

  /* ---- ABI 0.4 ---------------------------------------------------------------------------
   * Optional (NULL allowed; read only when struct_size covers it): makes a read-only buffer
   * holding the weight matrix at `data`: `rows` rows of `cols` values of `dtype` in the GGUF
   * layout, `size` bytes (rows times the row size). The backend may keep the matrix in a
   * layout of its own (e.g. columns interleaved for its kernels); views of the buffer still
   * mean the GGUF bytes. The host uses such a buffer only as matmul's `w`, get_rows' `table`
   * and the source of buffer_download and buffer_copy; a backend may refuse it anywhere else
   * (INVALID_ARGUMENT), and it is never an op's output or an upload's destination.
   * *out_copied is set to 1 when the backend copied the matrix (`data` is not read after the
   * call; the host may release it), 0 when the buffer refers to `data` as buffer_wrap_host's
   * do (`data` must then stay valid and unchanged until buffer_free).
   * Ownership: `data` borrowed as said; *out is the caller's, released with buffer_free.
   * [same-thread] */
  specd_status* (*buffer_wrap_weights)(void* device, const void* data, uint64_t size,
                                       specd_dtype dtype, int64_t rows, int64_t cols,
                                       specd_buffer** out, int32_t* out_copied);

  /* ---- ABI 0.5 ---------------------------------------------------------------------------
   * Read only when struct_size covers them; the host refuses a backend of minor < 5 for the
   * models (every model keeps its KV cache in a pool since 0.5).
   *
   * Attention over a paged KV pool: `attention` with each key slot s of query row i read
   * from pool row block_table[table_begin[i] + s / block_rows] * block_rows + s % block_rows
   * (specd_kv_pages). The mask's rules are attention's, with "below capacity" meaning "inside
   * the row's table": table_begin[i] + s / block_rows < the table's length. k_pool and
   * v_pool are [pool rows, n_head_kv * head_dim] of one dtype: f32, or where the backend
   * supports it f16 or q8_0 (else SPECD_STATUS_UNSUPPORTED); q, out f32 as in attention.
   * Batch invariance: a query row's result depends only on its (key, value) rows in logical
   * order, never on the other rows of the call, their sequences or where blocks lie.
   * [same-thread] */
  specd_status* (*attention_paged)(void* device, const specd_view* q, const specd_view* k_pool,
                                   const specd_view* v_pool, const specd_attention_mask* mask,
                                   const specd_kv_pages* pages,
                                   const specd_attention_params* params, const specd_view* out);

  /* Row scatter (KV writes into a pool): dst[indices[0, i], :] = src[i, :] for i = 0..m-1.
   * src [m, n], dst [rows, n]; indices int32 [1, m], each in [0, rows), pairwise distinct.
   * Same dtype: bytes copied verbatim (any dtype). src f32 and dst f16: each value rounded to
   * nearest even; src f32 and dst q8_0: each block of 32 quantized as llama.cpp's
   * quantize_row_q8_0_ref does (d = max|x| / 127 rounded to f16, q = round(x / d)). Backends
   * may answer SPECD_STATUS_UNSUPPORTED for conversions they lack. dst must not overlap src
   * or indices. [same-thread] */
  specd_status* (*set_rows)(void* device, const specd_view* src, const specd_view* indices,
                            const specd_view* dst);

  /* ---- ABI 0.7 ---------------------------------------------------------------------------
   * Optional (NULL allowed; read only when struct_size covers them). The host refuses a
   * hybrid model (gated DeltaNet layers, gated attention) on a backend without them, naming
   * the backend and what it lacks.
   *
   * A gated DeltaNet layer between its projections and its output norm, over m rows
   * (specd_recurrent_rows: each row's state in and out). For row i, with its state (conv
   * rows W of K - 1 rows of C values, oldest first; matrices M_h of S x S values):
   *   c[j]  = silu(sum_{t < K-1} W[t][j] conv_weight[j, t] + qkv[i, j] conv_weight[j, K-1])
   *   W     = the last K - 1 of (W rows, qkv[i, :])
   *   q_g, k_g = c's key heads g (c[g S ..], c[H_k S + g S ..]), each scaled by
   *           1 / max(||.||_2, eps); v_h = c[2 H_k S + h S ..]
   *   gate_h = softplus(alpha[i, h] + dt_bias[0, h]) * a[0, h]    (softplus(x) = log(1 + e^x),
   *           and x above 20)
   *   beta_h = sigmoid(beta[i, h])
   *   for every value head h, k = k_{h % H_k}, q = q_{h % H_k}:
   *     M_h  = exp(gate_h) M_h
   *     d    = beta_h (v_h - M_h^T k)       M_h[x][y]: key index x, value index y
   *     M_h += k d^T
   *     out[i, h S + y] = (M_h^T q)[y] / sqrt(S)
   * qkv f32 [m, C]; alpha, beta f32 [m, H_v]; conv_weight f32 [C, K]; dt_bias, a f32
   * [1, H_v]; out f32 [m, H_v S], not overlapping any input. conv_states f32 [slots,
   * (K - 1) C] (row t C + j of a slot = W[t][j]); ssm_states f32 [slots, H_v S S] (slot
   * element (h S + x) S + y = M_h[x][y]); a zeroed slot is the empty state. Batch invariance:
   * row i's output and states depend only on its inputs and the state it starts from.
   * [same-thread] */
  specd_status* (*gated_delta_net)(void* device, const specd_view* qkv, const specd_view* alpha,
                                   const specd_view* beta, const specd_view* conv_weight,
                                   const specd_view* dt_bias, const specd_view* a,
                                   const specd_view* conv_states, const specd_view* ssm_states,
                                   const specd_recurrent_rows* rows,
                                   const specd_delta_net_params* params, const specd_view* out);

  /* Gated output: y = x * sigmoid(gate) elementwise, sigmoid(g) = 1 / (1 + exp(-g)). All f32
   * [m, n] (gate may be a strided view, e.g. the gate half of a fused projection); y may
   * equal x. [same-thread] */
  specd_status* (*mul_sigmoid)(void* device, const specd_view* x, const specd_view* gate,
                               const specd_view* y);

  /* ---- ABI 0.8 ---------------------------------------------------------------------------
   * Optional (NULL allowed; read only when struct_size covers it). The host refuses a model
   * that needs it (gpt-oss) on a backend without it, naming the backend.
   *
   * gpt-oss's clamped SwiGLU (ggml's swiglu_oai): with g = min(gate, limit) and
   * u = clamp(up, -limit, limit), y = g / (1 + exp(-alpha g)) * (u + 1) elementwise; the
   * clamps are comparisons (unlike fminf, a NaN gate or up gives NaN). All f32
   * [m, n]; y may equal gate or up. [same-thread] */
  specd_status* (*swiglu_oai)(void* device, const specd_view* gate, const specd_view* up,
                              float alpha, float limit, const specd_view* y);
} specd_backend_vtable;

/* True when vtable `vt` (struct_size as built) has slot `field`. */
#define SPECD_BACKEND_HAS(vt, field) \
  ((vt)->struct_size >= offsetof(specd_backend_vtable, field) + sizeof((vt)->field))

#if UINTPTR_MAX == UINT64_MAX
/* Layout of ABI 0.1 — frozen; do not modify above this line once released. */
SPECD_STATIC_ASSERT(sizeof(specd_view) == 48, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_view, buffer) == 8, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_view, row_stride) == 40, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_attention_mask, extra_slots) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_attention_params, scale) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_rope_params, base) == 16, "frozen layout");
SPECD_STATIC_ASSERT(sizeof(specd_device_params) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_device_info, name) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_backend_vtable, score) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_backend_vtable, buffer_alloc) == 56, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_backend_vtable, matmul) == 104, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_backend_vtable, retired_argmax) == 176, "frozen layout");
/* Layout of ABI 0.2 additions. */
SPECD_STATIC_ASSERT(offsetof(specd_rope_params, mode) == 20, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_rope_params, freq_scale) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_rope_params, freq_factors) == 32, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_rope_params, ext_factor) == 40, "frozen layout");
/* Layout of ABI 0.4 additions. */
SPECD_STATIC_ASSERT(offsetof(specd_backend_vtable, buffer_wrap_weights) == 184, "frozen layout");
/* Layout of ABI 0.5 additions. */
SPECD_STATIC_ASSERT(offsetof(specd_kv_pages, block_table) == 8, "frozen layout");
SPECD_STATIC_ASSERT(sizeof(specd_kv_pages) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_backend_vtable, attention_paged) == 192, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_backend_vtable, set_rows) == 200, "frozen layout");
/* Layout of ABI 0.7 additions. */
SPECD_STATIC_ASSERT(offsetof(specd_recurrent_rows, state_out) == 16, "frozen layout");
SPECD_STATIC_ASSERT(sizeof(specd_delta_net_params) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_backend_vtable, gated_delta_net) == 208, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_backend_vtable, mul_sigmoid) == 216, "frozen layout");
/* Layout of ABI 0.8 additions. */
SPECD_STATIC_ASSERT(offsetof(specd_attention_params, window) == 20, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_attention_params, sinks) == 24, "frozen layout");
SPECD_STATIC_ASSERT(sizeof(specd_attention_params) == 32, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_rope_params, n_ctx_orig) == 56, "frozen layout");
SPECD_STATIC_ASSERT(sizeof(specd_rope_params) == 64, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_backend_vtable, swiglu_oai) == 224, "frozen layout");
#endif

SPECD_EXTERN_C_END

#endif /* SPECD_BACKEND_H */
