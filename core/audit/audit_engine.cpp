#include "audit/audit_engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "acceptance/labels.hpp"
#include "audit/audit_case.hpp"
#include "audit/distribution_tests.hpp"
#include "common/error.hpp"

namespace specd {
namespace {

constexpr double kExactTolerance = 1e-9;

// FNV-1a 64: a rule's id picks its random stream.
uint64_t text_hash(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

struct Plan {
  const AcceptanceRule* rule;
  const MarkovModel* table;
  SamplingParams sampling;
  specd_sibling_scheme scheme;
  const AuditConstraint* constraint;
  Translation translation = Translation::kText;  // two-vocabulary tables only
};

// Every sibling scheme the rule declares: each is a promise the audit checks.
std::vector<specd_sibling_scheme> declared_schemes(const AcceptanceRule& rule) {
  std::vector<specd_sibling_scheme> out;
  for (specd_sibling_scheme s :
       {SPECD_SIBLINGS_DETERMINISTIC, SPECD_SIBLINGS_IID, SPECD_SIBLINGS_WITHOUT_REPLACEMENT})
    if (rule.supports_scheme(s)) out.push_back(s);
  return out;
}

DraftSpec spec_for(const AcceptanceRule& rule, const AuditOptions& o, specd_sibling_scheme scheme,
                   std::string& shape) {
  DraftSpec spec;
  if (!o.tree.empty() && rule.supports_trees()) {
    spec.branching = o.tree;
    shape = "tree ";
    for (size_t i = 0; i < o.tree.size(); ++i) {
      if (i) shape += ',';
      shape += std::to_string(o.tree[i]);
    }
  } else {
    spec.branching.assign(o.k, 1);
    shape = "chain k=" + std::to_string(o.k);
  }
  spec.scheme = scheme;
  spec.with_q = spec.scheme != SPECD_SIBLINGS_DETERMINISTIC || rule.needs_q();
  return spec;
}

std::string format_tv(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string format_count(uint64_t n) {
  return std::to_string(n);
}

// " under mask" for a constrained case, nothing for an unconstrained one.
std::string where(const AuditCase& c) {
  return c.constraint == "none" ? "" : " under " + c.constraint;
}

void aggregate(RuleAudit& r, specd_lossless_label label) {
  bool any = false, wrong = false, not_rejected = false;
  uint64_t most_samples = 0;
  const AuditCase* worst_wrong = nullptr;
  const AuditCase* first_error = nullptr;
  double other_tv = 0;  // greedy-exact: worst TV where it makes no claim
  for (const AuditCase& c : r.cases) {
    if (c.verdict == "error") {
      if (!first_error) first_error = &c;
      continue;
    }
    if (!c.applicable && label != SPECD_LABEL_LOSSY) {
      other_tv = std::max(other_tv, c.has_exact ? c.exact_tv : c.mc_tv);
      continue;
    }
    if (!any || (c.has_exact && c.exact_tv > r.exact_tv)) r.exact_tv = c.has_exact ? c.exact_tv : 0;
    if (!any || c.mc_tv > r.mc_tv) {
      r.mc_tv = c.mc_tv;
      r.mc_tv_ci = c.mc_tv_ci;
    }
    r.p_value = any ? std::min(r.p_value, c.p_value) : c.p_value;
    r.samples = any ? std::min(r.samples, c.samples) : c.samples;
    most_samples = std::max(most_samples, c.samples);
    r.detectable_tv = any ? std::max(r.detectable_tv, c.detectable_tv) : c.detectable_tv;
    r.has_exact = r.has_exact || c.has_exact;
    any = true;
    if (c.verdict == "label-wrong") {
      wrong = true;
      if (!worst_wrong) worst_wrong = &c;
    }
    if (c.verdict == "not-rejected") not_rejected = true;
  }
  if (wrong) {
    r.verdict = "label-wrong";
    r.summary = "LABEL WRONG (" + worst_wrong->table + where(*worst_wrong) + ", " +
                worst_wrong->scheme + " drafts: exact TV " +
                (worst_wrong->has_exact ? format_tv(worst_wrong->exact_tv) : "n/a") + ", p-value " +
                format_tv(worst_wrong->p_value) + ")";
    if (worst_wrong->sampler_disagrees && !(worst_wrong->exact_tv > kExactTolerance))
      r.summary += ": its sampler disagrees with its own outcomes (p-value " +
                   format_tv(worst_wrong->outcomes_p_value) + ")";
    return;
  }
  if (first_error) {
    r.verdict = "error";
    r.summary = "ERROR: could not run (" + first_error->table + where(*first_error) + ", " +
                first_error->scheme + " drafts): " + first_error->error;
    return;
  }
  if (label == SPECD_LABEL_LOSSY ||
      (label != SPECD_LABEL_EXACT && label != SPECD_LABEL_GREEDY_EXACT)) {
    r.verdict = "lossy";
    r.summary = "lossy (measured TV " + format_tv(r.has_exact ? r.exact_tv : r.mc_tv) + ")";
    return;
  }
  if (not_rejected) {
    // Without outcomes only the G-test speaks, and a test that does not reject proves
    // nothing by itself: say what it could have seen.
    r.verdict = "not-rejected";
    r.summary = (label == SPECD_LABEL_GREEDY_EXACT ? "greedy-exact at T=0: " : "") +
                std::string("not rejected at ") + format_count(r.samples) +
                (most_samples > r.samples ? " to " + format_count(most_samples) : "") +
                " samples; a TV >= " + format_tv(r.detectable_tv) +
                " would have been detected with 95% power (no outcomes: not verified)";
  } else {
    r.verdict = "lossless";
    r.summary = label == SPECD_LABEL_GREEDY_EXACT ? "greedy-exact: lossless at T=0 (verified)"
                                                  : "lossless (verified)";
  }
  if (label == SPECD_LABEL_GREEDY_EXACT && (other_tv > 0 || r.cases.size() > 1))
    for (const AuditCase& c : r.cases)
      if (!c.applicable) {
        r.summary += "; not applicable at T=" + format_tv(c.temperature) + " (measured TV " +
                     format_tv(other_tv) + ")";
        break;
      }
}

}  // namespace

uint64_t audit_tree_nodes(const std::vector<uint32_t>& branching) {
  uint64_t nodes = 0, level = 1;
  for (uint32_t b : branching) {
    if (b != 0 && level > UINT64_MAX / b) return UINT64_MAX;
    level *= b;
    if (nodes > UINT64_MAX - level) return UINT64_MAX;
    nodes += level;
  }
  return nodes;
}

void check_audit_tree(const std::vector<uint32_t>& branching, const std::string& option) {
  const uint64_t nodes = audit_tree_nodes(branching);
  if (nodes > kMaxAuditDraftNodes)
    throw UsageError(option + " makes " + std::to_string(nodes) +
                     " draft nodes; the audit enumerates every draft of the shape, so a tree may "
                     "have at most " +
                     std::to_string(kMaxAuditDraftNodes) + " nodes (as a chain --k at most " +
                     std::to_string(kMaxAuditDraftNodes) + " tokens)");
}

bool AuditReport::any_label_wrong() const {
  for (const RuleAudit& r : rules)
    if (r.verdict == "label-wrong") return true;
  return false;
}

bool AuditReport::any_error() const {
  for (const RuleAudit& r : rules)
    if (r.verdict == "error") return true;
  return false;
}

RuleAudit rule_error_row(const std::string& id, const std::string& name, const std::string& label,
                         const std::string& message) {
  RuleAudit r;
  r.id = id;
  r.name = name;
  r.label = label;
  r.verdict = "error";
  r.summary = "ERROR: could not run: " + message;
  return r;
}

AuditReport run_audit(const std::vector<const AcceptanceRule*>& rules,
                      const std::vector<MarkovModel>& tables, const AuditOptions& options) {
  validate_sampling_params(options.sampling);
  if (options.tokens < 1) throw UsageError("--tokens must be at least 1");
  if (options.k < 1) throw UsageError("--k must be at least 1");
  if (!(options.alpha > 0 && options.alpha < 1)) throw UsageError("--alpha must be in (0, 1)");
  if (!(options.detect_tv >= 0 && options.detect_tv < 1))
    throw UsageError("--detect-tv must be in (0, 1)");
  for (uint32_t b : options.tree)
    if (b < 1) throw UsageError("--tree branching factors must be at least 1");
  if (options.k > kMaxAuditDraftNodes)
    throw UsageError("--k must be at most " + std::to_string(kMaxAuditDraftNodes));
  check_audit_tree(options.tree, "--tree");
  if (options.constraints.empty()) throw UsageError("--constraints needs at least one constraint");
  for (const MarkovModel& t : tables) sequence_space(t.vocab, options.tokens, 1u << 22);

  // Plan every case first: the per-case significance depends on how many a rule has.
  std::vector<std::vector<Plan>> plans(rules.size());
  size_t n_cases = 0;
  for (size_t i = 0; i < rules.size(); ++i) {
    for (const AuditConstraint& constraint : options.constraints)
      for (specd_sibling_scheme scheme : declared_schemes(*rules[i]))
        for (const MarkovModel& t : tables) {
          // A draft of another vocabulary comes as the draft-model proposer gives it: a chain
          // of i.i.d.-scheme nodes with q, by each way across, under each constraint.
          std::vector<Translation> ways = {Translation::kText};
          if (t.two_vocabularies()) {
            if (scheme != SPECD_SIBLINGS_IID) continue;
            ways.push_back(Translation::kIntersection);
          }
          for (Translation way : ways) {
            plans[i].push_back({rules[i], &t, options.sampling, scheme, &constraint, way});
            if (rules[i]->label() == SPECD_LABEL_GREEDY_EXACT &&
                options.sampling.temperature != 0) {
              SamplingParams greedy = options.sampling;
              greedy.temperature = 0;
              plans[i].push_back({rules[i], &t, greedy, scheme, &constraint, way});
            }
          }
        }
    n_cases += plans[i].size();
  }
  AuditReport report;
  report.cases = n_cases;

  for (size_t i = 0; i < rules.size(); ++i) {
    const AcceptanceRule& rule = *rules[i];
    if (plans[i].empty()) {
      report.rules.push_back(rule_error_row(rule.id(), rule.name(), label_name(rule.label()),
                                            "it declares no sibling scheme it supports"));
      continue;
    }
    RuleAudit ra;
    ra.id = rule.id();
    ra.name = rule.name();
    ra.label = label_name(rule.label());
    // Bonferroni over this rule's cases, and a random stream of the rule's own: the verdict
    // is the same whichever rules are audited beside it.
    ra.alpha_per_case = options.alpha / static_cast<double>(plans[i].size());
    const uint64_t rule_stream = options.seed * 0x9E3779B97F4A7C15ull + text_hash(rule.id());
    uint64_t case_no = 0;
    for (const Plan& plan : plans[i]) {
      AuditCase c;
      c.table = plan.table->name;
      c.constraint = plan.constraint->name;
      c.temperature = plan.sampling.temperature;
      CaseSetup setup;
      setup.model = plan.table;
      setup.sampling = plan.sampling;
      setup.constraint = *plan.constraint;
      setup.spec = spec_for(rule, options, plan.scheme, c.shape);
      setup.tokens = options.tokens;
      c.scheme = scheme_name(setup.spec.scheme);
      if (plan.table->two_vocabularies()) {
        setup.spec.branching.assign(options.k, 1);
        c.shape = "chain k=" + std::to_string(options.k);
        setup.translation = plan.translation;
        c.scheme = translation_name(plan.translation);
      }
      const bool exact_claim = rule.label() == SPECD_LABEL_EXACT ||
                               (rule.label() == SPECD_LABEL_GREEDY_EXACT && c.temperature == 0);
      c.applicable = exact_claim;
      Rng rng(rule_stream + (++case_no));
      const std::vector<double> target = target_distribution(setup);
      c.samples = options.samples;
      if (options.detect_tv > 0 && exact_claim && !rule.has_outcomes()) {
        c.samples = samples_to_detect(target, options.detect_tv, ra.alpha_per_case, kAuditPower,
                                      options.samples, options.max_samples);
        if (c.samples == 0)
          throw UsageError("--detect-tv " + format_tv(options.detect_tv) + " needs more than " +
                           std::to_string(options.max_samples) + " samples on table '" + c.table +
                           "'; ask for a larger distance");
      }
      c.detectable_tv = detectable_tv(target, c.samples, ra.alpha_per_case, kAuditPower).tv;
      CaseNumbers n;
      try {
        n = measure_case(rule, setup, c.samples, rng);
      } catch (const UsageError&) {
        throw;
      } catch (const std::exception& e) {
        c.verdict = "error";
        c.error = e.what();
        ra.cases.push_back(c);
        continue;
      }
      c.has_exact = n.has_exact;
      c.exact_tv = n.has_exact ? total_variation(n.exact, n.target) : 0;
      std::vector<double> empirical(n.counts.size());
      for (size_t j = 0; j < n.counts.size(); ++j)
        empirical[j] = static_cast<double>(n.counts[j]) / static_cast<double>(c.samples);
      c.mc_tv = c.samples ? total_variation(empirical, n.target) : 0;
      size_t outcomes = 0;  // cells the sampler can reach: possible under either side
      for (size_t j = 0; j < n.target.size(); ++j)
        if (n.target[j] > 0 || n.counts[j] > 0 || (n.has_exact && n.exact[j] > 0)) ++outcomes;
      c.mc_tv_ci = tv_interval(c.mc_tv, c.samples, outcomes, 0.95);
      c.p_value = g_test(n.target, n.counts).p_value;
      if (n.has_exact && c.samples > 0) {
        c.outcomes_p_value = g_test(n.exact, n.counts).p_value;
        c.sampler_disagrees = c.outcomes_p_value < ra.alpha_per_case;
      }
      if (c.sampler_disagrees && !exact_claim) {
        c.verdict = "error";
        c.error = "its sampler disagrees with its own outcomes (G-test p-value " +
                  format_tv(c.outcomes_p_value) + "), so its measured TV cannot be trusted";
      } else if (exact_claim) {
        const bool wrong = (c.has_exact && c.exact_tv > kExactTolerance) ||
                           (c.samples > 0 && c.p_value < ra.alpha_per_case) || c.sampler_disagrees;
        c.verdict = wrong ? "label-wrong" : c.has_exact ? "lossless" : "not-rejected";
      } else {
        c.verdict = rule.label() == SPECD_LABEL_GREEDY_EXACT ? "not-applicable" : "lossy";
      }
      ra.cases.push_back(c);
    }
    aggregate(ra, rule.label());
    if (rule.supports_trees() && options.tree.empty() &&
        (ra.verdict == "lossless" || ra.verdict == "not-rejected"))
      ra.summary += "; on chains only: trees not audited (--tree)";
    report.rules.push_back(std::move(ra));
  }
  return report;
}

}  // namespace specd
