// Acceptance rules created from plugins for the audit's tests, and a rule's row of a report.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "acceptance/acceptance_rule.hpp"
#include "audit/audit_report.hpp"
#include "plugin/registry.hpp"

namespace specd::test {

struct AuditedRules {
  PluginRegistry registry;
  std::vector<std::unique_ptr<AcceptanceRule>> owned;
  std::vector<const AcceptanceRule*> views;

  // Every acceptance plugin whose file lies in `dir`, or (when `names` is not empty) the
  // named ones, found in `dir` or among the bundled plugins.
  explicit AuditedRules(const std::string& dir, const std::vector<std::string>& names = {})
      : registry({dir}) {
    if (names.empty()) {
      for (const auto* p : registry.of_kind(SPECD_KIND_ACCEPTANCE))
        if (p->path.find(dir) == 0) add(*p);
    }
    for (const std::string& n : names) add(registry.require(n, SPECD_KIND_ACCEPTANCE));
  }

 private:
  void add(const LoadedPlugin& plugin) {
    owned.push_back(std::make_unique<AcceptanceRule>(plugin, nullptr));
    views.push_back(owned.back().get());
  }
};

// The row of rule `name` in `report`; fails the case when the rule was not audited.
inline const RuleAudit& audited_rule(const AuditReport& report, const std::string& name) {
  for (const auto& x : report.rules)
    if (x.name == name) return x;
  FAIL("rule not audited: " << name);
  return report.rules.front();
}

}  // namespace specd::test
