// The specd_verifier_vtable of a verifier object the host makes itself over a model it has
// already loaded (the built-in target verifier, the scheduler's batch verifier): each entry
// forwards to T's info/begin/verify/commit and converts exceptions into statuses
// (status_guard), as a plugin's entries would; create is refused (the host constructs T).
#pragma once

#include <span>

#include "plugin/host_services.hpp"
#include "plugin/status_guard.hpp"
#include "specd/verifier.h"

namespace specd {

template <class T>
const specd_verifier_vtable* host_verifier_vtable() {
  static const specd_verifier_vtable table = {
      sizeof(specd_verifier_vtable),
      0,
      0,
      [](const specd_host*, const specd_params*, const char*, void**) -> specd_status* {
        return host_table()->status_create(
            nullptr, SPECD_STATUS_UNSUPPORTED,
            "this verifier is created by the host over its loaded model");
      },
      [](void* v) { delete static_cast<T*>(v); },
      [](void* v, specd_verifier_info* info) {
        return status_guard([&] { static_cast<T*>(v)->info(*info); });
      },
      [](void* v, const specd_token* tokens, uint32_t n, float* hidden) {
        return status_guard(
            [&] { static_cast<T*>(v)->begin(std::span<const specd_token>(tokens, n), hidden); });
      },
      [](void* v, specd_token root, const specd_draft_tree* tree, float* logits, float* hidden) {
        return status_guard([&] { static_cast<T*>(v)->verify(root, *tree, logits, hidden); });
      },
      [](void* v, const int32_t* path, uint32_t n) {
        return status_guard([&] { static_cast<T*>(v)->commit(std::span<const int32_t>(path, n)); });
      },
  };
  return &table;
}

}  // namespace specd
