// ABI structs: struct_size comes first everywhere, and the frozen 0.1 layouts hold.
// (Offsets are also frozen with static_asserts in the headers; this test makes a layout
// change fail loudly in the test report, not only in a compiler message.)
#include <doctest/doctest.h>

#include <cstddef>

#include "specd/acceptance.h"
#include "specd/backend.h"
#include "specd/draft.h"
#include "specd/entry.h"
#include "specd/host.h"
#include "specd/types.h"
#include "specd/verifier.h"

TEST_CASE("every ABI struct starts with struct_size") {
  CHECK(offsetof(specd_plugin_descriptor, struct_size) == 0);
  CHECK(offsetof(specd_host, struct_size) == 0);
  CHECK(offsetof(specd_param, struct_size) == 0);
  CHECK(offsetof(specd_params, struct_size) == 0);
  CHECK(offsetof(specd_draft_tree, struct_size) == 0);
  CHECK(offsetof(specd_target_dists, struct_size) == 0);
  CHECK(offsetof(specd_accept_result, struct_size) == 0);
  CHECK(offsetof(specd_acceptance_vtable, struct_size) == 0);
}

TEST_CASE("ABI 0.1 sizes on LP64") {
  // The 0.1 descriptor ends at 72 bytes; 0.6 appended min_host_abi_minor there.
  CHECK(offsetof(specd_plugin_descriptor, min_host_abi_minor) == 72);
  CHECK(sizeof(specd_plugin_descriptor) == 80);
  CHECK(sizeof(specd_draft_tree) == 40);
  CHECK(sizeof(specd_target_dists) == 24);
  CHECK(sizeof(specd_accept_result) == 24);
  CHECK(sizeof(specd_acceptance_vtable) == 48);
  CHECK(sizeof(specd_host) == 88);
}

TEST_CASE("SPECD_HOST_HAS sees fields within struct_size only") {
  specd_host host{};
  host.struct_size = offsetof(specd_host, rng_uniform);
  CHECK(SPECD_HOST_HAS(&host, status_message));
  CHECK_FALSE(SPECD_HOST_HAS(&host, rng_uniform));
  host.struct_size = sizeof(specd_host);
  CHECK(SPECD_HOST_HAS(&host, models));
}

TEST_CASE("ABI 0.2 appends to specd_rope_params after the frozen 0.1 fields") {
  CHECK(offsetof(specd_rope_params, base) == 16);  // 0.1 ends here (struct_size 20)
  CHECK(offsetof(specd_rope_params, mode) == 20);
  CHECK(offsetof(specd_rope_params, freq_scale) == 24);
  CHECK(offsetof(specd_rope_params, freq_factors) == 32);
  CHECK(offsetof(specd_rope_params, ext_factor) == 40);  // 0.2 ends here (struct_size 40)
  CHECK(offsetof(specd_rope_params, n_ctx_orig) == 56);  // ABI 0.8: YaRN
  CHECK(sizeof(specd_rope_params) == 64);
  CHECK(SPECD_ROPE_NORMAL == 0u);  // ggml's rope type values
  CHECK(SPECD_ROPE_NEOX == 2u);
}

TEST_CASE("ABI 0.3 appends to specd_verifier_info after the frozen 0.1 fields") {
  CHECK(offsetof(specd_verifier_info, context_length) == 12);  // 0.1 ends here (16 bytes)
  CHECK(offsetof(specd_verifier_info, vocab_digest) == 16);
  CHECK(offsetof(specd_verifier_info, last_overhead_s) == 24);
  CHECK(sizeof(specd_verifier_info) == 32);
}

TEST_CASE("ABI 0.8 appends window and sinks to specd_attention_params after the 0.1 fields") {
  CHECK(offsetof(specd_attention_params, scale) == 16);  // 0.1 .. 0.7 end here (struct_size 20)
  CHECK(offsetof(specd_attention_params, window) == 20);
  CHECK(offsetof(specd_attention_params, sinks) == 24);
  CHECK(sizeof(specd_attention_params) == 32);
}
