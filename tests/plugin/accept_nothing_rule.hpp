// The rule behind the test plugins: stateless and lossy, for i.i.d. siblings, it accepts no
// draft token and emits token 0. Each plugin source includes this once; the definitions have
// internal linkage so that no plugin exports them.
#pragma once

#include "specd/acceptance.h"

namespace {

void destroy_nothing(void*) {}

specd_status* accept_nothing(void*, const specd_draft_tree*, const specd_target_dists*, specd_rng*,
                             specd_accept_result* result) {
  result->path_length = 0;
  result->next_token = 0;
  return nullptr;
}

// The vtable of this rule, its objects made by the plugin's own `create`.
constexpr specd_acceptance_vtable accept_nothing_vtable(specd_status* (*create)(const specd_host*,
                                                                                const specd_params*,
                                                                                void**)) {
  return {sizeof(specd_acceptance_vtable),
          SPECD_LABEL_LOSSY,
          SPECD_ACCEPT_SCHEME_BIT(SPECD_SIBLINGS_IID),
          create,
          &destroy_nothing,
          &accept_nothing,
          nullptr};
}

}  // namespace
