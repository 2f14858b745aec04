/* SPECD_C_PROPOSER_PLUGIN expands to valid C11 (-pedantic -Werror); the acceptance macro is
 * compiled by sdk/examples/argmax-c in the out-of-tree test. Compiled only, never loaded. */
#include "specd/c/plugin.h"

static specd_status* create(const specd_host* host, const specd_params* params,
                            const char* model_path, const specd_proposer_context* context,
                            const specd_transform* transform, void** out) {
  (void)host;
  (void)params;
  (void)model_path;
  (void)context;
  (void)transform;
  *out = NULL;
  return NULL;
}
static void destroy(void* proposer) {
  (void)proposer;
}
static specd_status* begin(void* proposer, const specd_token* tokens, uint32_t n,
                           const float* hidden) {
  (void)proposer;
  (void)tokens;
  (void)n;
  (void)hidden;
  return NULL;
}
static specd_status* propose(void* proposer, const specd_token* tokens, uint32_t n, specd_rng* rng,
                             specd_draft_output* out) {
  (void)proposer;
  (void)tokens;
  (void)n;
  (void)rng;
  out->n_nodes = 0;
  return NULL;
}
static specd_status* commit(void* proposer, const specd_token* accepted, uint32_t n,
                            specd_token next, const float* hidden) {
  (void)proposer;
  (void)accepted;
  (void)n;
  (void)next;
  (void)hidden;
  return NULL;
}

SPECD_C_PROPOSER_PLUGIN("org.specd.test.c-proposer", "c-proposer", "0.0.1", "compile check", 0,
                        "exact-match", create, destroy, begin, propose, commit)
