// Text and JSON renderings of an audit report.
#pragma once

#include <string>
#include <vector>

#include "audit/audit_engine.hpp"

namespace specd {

// A header line with the settings, one row per rule (worst case over tables), and with
// `details` one row per case.
std::string format_audit_text(const AuditReport& report, const AuditOptions& options,
                              const std::vector<MarkovModel>& tables, bool details);

// {"rules": [{"id", "name", "label", "exact_tv", "mc_tv", "mc_tv_ci": [lo, hi], "p_value",
//   "samples", "detectable_tv", "verdict", "summary", "cases": [...]}], "settings": {...},
//   "label_wrong", "error"}; exact_tv is null for a rule without outcomes; verdict is
//   "lossless", "not-rejected" (no outcomes: only tested), "lossy", "label-wrong" or "error"
//   (the rule could not run; cases carry "error" with the message); "not-applicable" only
//   inside cases.
std::string format_audit_json(const AuditReport& report, const AuditOptions& options,
                              const std::vector<MarkovModel>& tables);

}  // namespace specd
