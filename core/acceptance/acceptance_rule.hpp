// A loaded acceptance plugin as a C++ object: created from its [acceptance] parameters,
// called with validated trees, its answers checked before anyone uses them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "acceptance/pairing.hpp"
#include "plugin/host_services.hpp"
#include "plugin/registry.hpp"
#include "specd/acceptance.h"

namespace specd {

struct AcceptResult {
  std::vector<int32_t> path;   // accepted node ids, root-to-leaf
  specd_token next_token = 0;  // correction or bonus token
};

struct AcceptOutcome {
  std::vector<int32_t> path;
  specd_token next_token = 0;
  double probability = 0;
};

class AcceptanceRule {
 public:
  // Creates a rule object of `plugin` (which must be of kind acceptance) with `params`
  // (may be NULL: no parameters). A bad status from create becomes UsageError for invalid
  // parameters, else Error, prefixed with the plugin id.
  AcceptanceRule(const LoadedPlugin& plugin, const specd_params* params);
  ~AcceptanceRule();
  AcceptanceRule(AcceptanceRule&& other) noexcept;
  AcceptanceRule& operator=(AcceptanceRule&&) = delete;
  AcceptanceRule(const AcceptanceRule&) = delete;
  AcceptanceRule& operator=(const AcceptanceRule&) = delete;

  const std::string& id() const { return info_.id; }
  const std::string& name() const { return info_.name; }
  specd_lossless_label label() const { return info_.label; }
  uint64_t flags() const { return info_.flags; }
  const RuleInfo& info() const { return info_; }
  bool needs_q() const { return info_.flags & SPECD_ACCEPT_NEEDS_Q; }
  bool supports_trees() const { return info_.flags & SPECD_ACCEPT_SUPPORTS_TREES; }
  bool supports_scheme(specd_sibling_scheme s) const {
    return info_.flags & SPECD_ACCEPT_SCHEME_BIT(s);
  }
  bool has_outcomes() const { return vtable_->outcomes != nullptr; }

  // One acceptance walk. The caller has validated tree and target (validate_tree,
  // validate_target) and the pairing; the result is checked (validate_accept_result) and a
  // violation throws Error naming the plugin.
  AcceptResult accept(const specd_draft_tree& tree, const specd_target_dists& target,
                      Rng& rng) const;

  // Every outcome of `accept` with its exact probability (outcomes with equal path and token
  // are reported as the rule emitted them, not merged). Each is validated, and the total must
  // be 1 within 1e-9. Throws Error when the plugin has no `outcomes`.
  std::vector<AcceptOutcome> outcomes(const specd_draft_tree& tree,
                                      const specd_target_dists& target) const;

 private:
  RuleInfo info_;
  const specd_acceptance_vtable* vtable_ = nullptr;
  void* object_ = nullptr;
};

}  // namespace specd
