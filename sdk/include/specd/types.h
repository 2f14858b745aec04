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
 * Nested tables are flattened with dots ("tree.depth"); arrays are given as their TOML text.
 */
typedef uint32_t specd_param_type;
#define SPECD_PARAM_BOOL ((specd_param_type)1)
#define SPECD_PARAM_INT ((specd_param_type)2)
#define SPECD_PARAM_FLOAT ((specd_param_type)3)
#define SPECD_PARAM_STRING ((specd_param_type)4) /* also arrays, as TOML text */

typedef struct specd_param {
  uint32_t struct_size;
  const char* key;        /* UTF-8, NUL-terminated; owned by the host */
  specd_param_type type;
  specd_bool bool_value;  /* valid when type == SPECD_PARAM_BOOL */
  int64_t int_value;      /* valid when type == SPECD_PARAM_INT */
  double float_value;     /* valid when type == SPECD_PARAM_FLOAT or SPECD_PARAM_INT */
  const char* string_value; /* valid when type == SPECD_PARAM_STRING; owned by the host */
  const char* location;   /* "file:line:col" of the value, for error messages; owned by host */
} specd_param;

typedef struct specd_params {
  uint32_t struct_size;
  uint32_t count;
  const specd_param* items; /* [count]; owned by the host, valid for the call only */
} specd_params;

/* ---- Randomness --------------------------------------------------------------------------
 * All randomness a plugin uses comes from the host so that runs are reproducible from
 * [engine] seed and benchmarks can use common random numbers. Opaque, host-owned.
 */
typedef struct specd_rng specd_rng;

SPECD_EXTERN_C_END

#endif /* SPECD_TYPES_H */
