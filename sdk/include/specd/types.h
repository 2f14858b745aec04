/* specd ABI — basic types shared by every plugin kind: tokens, plugin kinds, parameters
 * from the TOML configuration, and the host's random number source.
 *
 * Ownership: every pointer in these structs is borrowed. Unless a function says otherwise,
 * it stays valid only for the duration of the call it is passed to; copy what you keep.
 */
#ifndef SPECD_TYPES_H
#define SPECD_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "specd/version.h"

SPECD_EXTERN_C_BEGIN

/* A token id of the target's vocabulary, 0 <= id < vocab_size. */
typedef int32_t specd_token;

typedef uint32_t specd_bool; /* 0 = false, 1 = true */

/* Plugin kinds (a library provides exactly one plugin of one kind). */
typedef uint32_t specd_plugin_kind;
#define SPECD_KIND_BACKEND ((specd_plugin_kind)1)
#define SPECD_KIND_PROPOSER ((specd_plugin_kind)2)
#define SPECD_KIND_VERIFIER ((specd_plugin_kind)3)
#define SPECD_KIND_ACCEPTANCE ((specd_plugin_kind)4)

/* ---- Parameters: the plugin's own TOML table, flattened ----------------------------------
 * The host hands each plugin the keys of its configuration section (for an acceptance rule,
 * the [acceptance] table minus the keys the host itself consumes; for a proposer, [proposer]).
 * Nested tables are flattened with dots ("tree.depth").
 *
 * Arrays (ABI 0.2): an array whose elements are all booleans, all integers, all numbers
 * (integers and floats mixed: given as floats), all strings, or all such arrays, reaches a
 * plugin built against ABI >= 0.2 as SPECD_PARAM_ARRAY with its value in
 * specd_params.arrays[i]. Any other array (elements of mixed kinds, tables), and every array
 * given to a plugin built against ABI 0.1, is SPECD_PARAM_STRING holding the array's TOML
 * text, as in ABI 0.1.
 *
 * Strings: every `key`, `string_value` and `strings[i]` is UTF-8 (TOML text is UTF-8),
 * NUL-terminated, escapes already decoded. `location` is "file:line:col" of the value in the
 * configuration file, or "--set section.key" for a value given on the command line.
 */
typedef uint32_t specd_param_type;
#define SPECD_PARAM_BOOL ((specd_param_type)1)
#define SPECD_PARAM_INT ((specd_param_type)2)
#define SPECD_PARAM_FLOAT ((specd_param_type)3)
#define SPECD_PARAM_STRING ((specd_param_type)4) /* also arrays for ABI 0.1 plugins (above) */
#define SPECD_PARAM_ARRAY ((specd_param_type)5)  /* ABI 0.2: value in specd_params.arrays */

/* One key. Its size is frozen: it is the stride of specd_params.items, so it can never grow
 * (data added later goes into arrays beside `items`, as `arrays` did in ABI 0.2). */
typedef struct specd_param {
  uint32_t struct_size;
  const char* key;        /* UTF-8, NUL-terminated; owned by the host */
  specd_param_type type;
  specd_bool bool_value;  /* valid when type == SPECD_PARAM_BOOL */
  int64_t int_value;      /* valid when type == SPECD_PARAM_INT */
  double float_value;     /* valid when type == SPECD_PARAM_FLOAT or SPECD_PARAM_INT */
  const char* string_value; /* valid when type == SPECD_PARAM_STRING; for SPECD_PARAM_ARRAY
                               the array's TOML text (for messages); owned by the host */
  const char* location;   /* "file:line:col" of the value, for error messages; owned by host */
} specd_param;

/* The value of an array parameter (ABI 0.2): `count` elements of one type. Exactly the
 * pointer for `element_type` is set (for SPECD_PARAM_INT also `floats`, the same values
 * converted); the others are NULL. An empty array has count 0 and element_type 0.
 * Ownership: the host's, valid as long as the specd_params it came with. */
typedef struct specd_param_array {
  uint32_t struct_size;
  uint32_t count;
  specd_param_type element_type; /* BOOL, INT, FLOAT, STRING or ARRAY; 0 when count == 0 */
  uint32_t reserved;
  const specd_bool* bools;    /* [count] when element_type == SPECD_PARAM_BOOL */
  const int64_t* ints;        /* [count] when SPECD_PARAM_INT */
  const double* floats;       /* [count] when SPECD_PARAM_FLOAT or SPECD_PARAM_INT */
  const char* const* strings; /* [count] when SPECD_PARAM_STRING; UTF-8 */
  const struct specd_param_array* const* arrays; /* [count] when SPECD_PARAM_ARRAY (nested
                                                    arrays, e.g. [[0], [0, 1]]) */
} specd_param_array;

typedef struct specd_params {
  uint32_t struct_size;
  uint32_t count;
  const specd_param* items; /* [count]; owned by the host, valid for the call only */
  /* ABI 0.2: [count]; arrays[i] is the value of items[i] when its type is SPECD_PARAM_ARRAY,
   * NULL otherwise. Read it only when SPECD_PARAMS_HAS(params, arrays). Owned by the host,
   * valid for the call only, like `items`. */
  const specd_param_array* const* arrays;
} specd_params;

/* True when `params` has field `field` (it was appended in a minor the host knows). */
#define SPECD_PARAMS_HAS(params, field) \
  ((params)->struct_size >= offsetof(specd_params, field) + sizeof((params)->field))

/* ---- Randomness --------------------------------------------------------------------------
 * All randomness a plugin uses comes from the host so that runs are reproducible from
 * [engine] seed and benchmarks can use common random numbers. Opaque, host-owned.
 */
typedef struct specd_rng specd_rng;

#if UINTPTR_MAX == UINT64_MAX
/* Layout of ABI 0.1 — frozen; specd_param may never grow (it is an array element). */
SPECD_STATIC_ASSERT(offsetof(specd_param, key) == 8, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_param, int_value) == 24, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_param, location) == 48, "frozen layout");
SPECD_STATIC_ASSERT(sizeof(specd_param) == 56, "specd_param is the stride of items: frozen");
SPECD_STATIC_ASSERT(offsetof(specd_params, items) == 8, "frozen layout");
/* Layout of ABI 0.2 — frozen. */
SPECD_STATIC_ASSERT(offsetof(specd_params, arrays) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_param_array, element_type) == 8, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_param_array, bools) == 16, "frozen layout");
SPECD_STATIC_ASSERT(offsetof(specd_param_array, arrays) == 48, "frozen layout");
#endif

SPECD_EXTERN_C_END

#endif /* SPECD_TYPES_H */
