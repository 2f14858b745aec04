/* An acceptance rule in plain C: follow the child whose token is the target's argmax,
 * stop at the first node without one and emit that argmax. At temperature 0 this is
 * exactly plain greedy decoding, so the rule is labelled greedy-exact; at higher
 * temperatures it makes no claim (it never samples).
 *
 * It takes one optional key, `max_accept` (integer >= 0, 0 = no limit): the most draft
 * tokens accepted in one round. */
#include <specd/c/plugin.h>

#include <stdlib.h>

typedef struct argmax_rule {
  const specd_host* host; /* outlives the rule (host.h); for statuses made later */
  int64_t max_accept;
} argmax_rule;

static const char* const known_keys[] = {"max_accept", NULL};

static specd_status* argmax_create(const specd_host* host, const specd_params* params, void** out) {
  const specd_param* unknown = specd_c_unknown_param(params, known_keys);
  const specd_param* max_accept = specd_c_param(params, "max_accept");
  argmax_rule* rule;
  if (unknown)
    return specd_c_status(host, SPECD_STATUS_INVALID_ARGUMENT,
                          "%s: unknown key '%s' (known: max_accept)", specd_c_location(unknown),
                          unknown->key);
  if (max_accept && (max_accept->type != SPECD_PARAM_INT || max_accept->int_value < 0))
    return specd_c_status(host, SPECD_STATUS_INVALID_ARGUMENT,
                          "%s: key 'max_accept' must be an integer >= 0",
                          specd_c_location(max_accept));
  rule = (argmax_rule*)calloc(1, sizeof *rule);
  if (!rule) return specd_c_status(host, SPECD_STATUS_OUT_OF_MEMORY, "out of memory");
  rule->host = host;
  rule->max_accept = max_accept ? max_accept->int_value : 0;
  *out = rule;
  return NULL;
}

static void argmax_destroy(void* rule) {
  free(rule);
}

/* The most probable token of a row, the lowest id on ties. */
static specd_token row_argmax(const double* row, uint32_t vocab_size) {
  uint32_t best = 0, x;
  for (x = 1; x < vocab_size; ++x)
    if (row[x] > row[best]) best = x;
  return (specd_token)best;
}

/* The accepted path and next token: written to `path`/`length`/`next`. */
static void argmax_walk(const argmax_rule* rule, const specd_draft_tree* tree,
                        const specd_target_dists* target, int32_t* path, uint32_t capacity,
                        uint32_t* length, specd_token* next) {
  int32_t node = 0; /* the root */
  uint32_t n = 0;
  for (;;) {
    const specd_token want =
        row_argmax(target->p + (size_t)node * target->vocab_size, target->vocab_size);
    int32_t child = -1;
    uint32_t i;
    if (rule->max_accept == 0 || n < (uint64_t)rule->max_accept)
      for (i = 0; i < tree->n_nodes && child < 0; ++i)
        if (tree->parents[i] == node && tree->tokens[i] == want) child = (int32_t)i + 1;
    if (child < 0 || n >= capacity) {
      *length = n;
      *next = want;
      return;
    }
    path[n++] = child;
    node = child;
  }
}

static specd_status* argmax_accept(void* rule, const specd_draft_tree* tree,
                                   const specd_target_dists* target, specd_rng* rng,
                                   specd_accept_result* result) {
  (void)rng; /* deterministic */
  argmax_walk((const argmax_rule*)rule, tree, target, result->path, result->path_capacity,
              &result->path_length, &result->next_token);
  return NULL;
}

/* One outcome, with probability 1: the walk never samples. */
static specd_status* argmax_outcomes(void* rule, const specd_draft_tree* tree,
                                     const specd_target_dists* target, specd_outcome_fn emit,
                                     void* user) {
  const argmax_rule* self = (const argmax_rule*)rule;
  int32_t* path = (int32_t*)malloc(((size_t)tree->n_nodes + 1) * sizeof *path);
  uint32_t length = 0;
  specd_token next = 0;
  if (!path) return specd_c_status(self->host, SPECD_STATUS_OUT_OF_MEMORY, "out of memory");
  argmax_walk(self, tree, target, path, tree->n_nodes, &length, &next);
  emit(user, path, length, next, 1.0);
  free(path);
  return NULL;
}

SPECD_C_ACCEPTANCE_PLUGIN("com.example.accept.argmax-c", "argmax-c", "1.0.0",
                          "follows the target's argmax through the tree (C example)",
                          SPECD_LABEL_GREEDY_EXACT,
                          SPECD_ACCEPT_SUPPORTS_TREES |
                              SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_DETERMINISTIC) |
                              SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID) |
                              SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_WITHOUT_REPLACEMENT),
                          argmax_create, argmax_destroy, argmax_accept, argmax_outcomes)
