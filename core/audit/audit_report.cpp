#include "audit/audit_report.hpp"

#include <cmath>
#include <cstdio>

namespace specd {
namespace {

std::string num(double v, const char* fmt = "%.3g") {
  if (!std::isfinite(v)) return "inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s + " ";
}

std::string join(const std::vector<uint32_t>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += std::to_string(v[i]);
  }
  return out;
}

std::string ci(const std::pair<double, double>& c) {
  std::string out = "[";
  out += num(c.first);
  out += ", ";
  out += num(c.second);
  out += ']';
  return out;
}

std::string settings_line(const AuditReport& report, const AuditOptions& o,
                          const std::vector<MarkovModel>& tables) {
  const std::string tree = join(o.tree, ",");
  std::string s = "specd audit: " + std::to_string(tables.size()) + " table(s), " +
                  std::to_string(o.tokens) + " tokens, chains of k=" + std::to_string(o.k);
  if (!tree.empty()) s += ", trees " + tree + " for tree rules";
  s += ", temperature " + num(o.sampling.temperature);
  s += ", constraints ";
  for (size_t i = 0; i < o.constraints.size(); ++i) s += (i ? "," : "") + o.constraints[i].name;
  if (o.sampling.top_k > 0) s += ", top-k " + std::to_string(o.sampling.top_k);
  if (o.sampling.top_p < 1) s += ", top-p " + num(o.sampling.top_p);
  if (o.sampling.min_p > 0) s += ", min-p " + num(o.sampling.min_p);
  s += ", " + std::to_string(o.samples) + " samples";
  if (o.detect_tv > 0)
    s += " (more for rules without outcomes, until a TV of " + num(o.detect_tv) +
         " is detected with 95% power)";
  s += ", seed " + std::to_string(o.seed) + "\n";
  s += "significance: alpha " + num(o.alpha) +
       " per rule, Bonferroni over the rule's own cases (alpha / cases per case, " +
       std::to_string(report.cases) +
       " cases in all): other rules never change a rule's verdict; exact TV tolerance 1e-9\n";
  return s;
}

}  // namespace

std::string format_audit_text(const AuditReport& report, const AuditOptions& options,
                              const std::vector<MarkovModel>& tables, bool details) {
  std::string out = settings_line(report, options, tables) + "\n";
  out += pad("rule", 16) + pad("label", 13) + pad("exact TV", 9) + pad("MC TV", 7) +
         pad("95% CI", 18) + pad("p-value", 8) + "verdict\n";
  for (const RuleAudit& r : report.rules) {
    if (r.verdict == "error") {  // nothing measured
      out += pad(r.name, 16) + pad(r.label, 13) + pad("n/a", 9) + pad("n/a", 7) + pad("n/a", 18) +
             pad("n/a", 8) + r.summary + "\n";
      continue;
    }
    out += pad(r.name, 16) + pad(r.label, 13) + pad(r.has_exact ? num(r.exact_tv) : "n/a", 9) +
           pad(num(r.mc_tv), 7) + pad(ci(r.mc_tv_ci), 18) + pad(num(r.p_value), 8) + r.summary +
           "\n";
  }
  if (details) {
    out += "\n" + pad("rule", 16) + pad("table", 13) + pad("constraint", 12) + pad("T", 4) +
           pad("draft", 12) + pad("scheme", 14) + pad("exact TV", 9) + pad("MC TV", 7) +
           pad("95% CI", 18) + pad("p-value", 8) + "verdict\n";
    for (const RuleAudit& r : report.rules)
      for (const AuditCase& c : r.cases)
        out += pad(r.name, 16) + pad(c.table, 13) + pad(c.constraint, 12) +
               pad(num(c.temperature), 4) + pad(c.shape, 12) + pad(c.scheme, 14) +
               pad(c.has_exact ? num(c.exact_tv) : "n/a", 9) + pad(num(c.mc_tv), 7) +
               pad(ci(c.mc_tv_ci), 18) + pad(num(c.p_value), 8) + c.verdict +
               (c.error.empty() ? "" : ": " + c.error) + "\n";
  }
  out +=
      "\nexact TV: from each rule's exact outcomes; MC TV: plug-in estimate from the rule's "
      "sampler (biased upward by about sqrt(outcomes/samples)) with a distribution-free 95% "
      "interval; "
      "p-value: G-test of the samples against the target. A rule without outcomes is only "
      "tested, never verified: its verdict says which TV the test would have detected.\n";
  return out;
}

std::string format_audit_json(const AuditReport& report, const AuditOptions& o,
                              const std::vector<MarkovModel>& tables) {
  std::string out = "{\"rules\": [";
  for (size_t i = 0; i < report.rules.size(); ++i) {
    const RuleAudit& r = report.rules[i];
    out += i ? ",\n  " : "\n  ";
    out += "{\"id\": " + json_str(r.id) + ", \"name\": " + json_str(r.name) +
           ", \"label\": " + json_str(r.label) +
           ", \"exact_tv\": " + (r.has_exact ? json_num(r.exact_tv) : "null") +
           ", \"mc_tv\": " + json_num(r.mc_tv) + ", \"mc_tv_ci\": [" + json_num(r.mc_tv_ci.first) +
           ", " + json_num(r.mc_tv_ci.second) + "], \"p_value\": " + json_num(r.p_value) +
           ", \"samples\": " + std::to_string(r.samples) +
           ", \"detectable_tv\": " + json_num(r.detectable_tv) +
           ", \"alpha_per_case\": " + json_num(r.alpha_per_case) +
           ", \"verdict\": " + json_str(r.verdict) + ", \"summary\": " + json_str(r.summary) +
           ", \"cases\": [";
    for (size_t j = 0; j < r.cases.size(); ++j) {
      const AuditCase& c = r.cases[j];
      out += j ? ", " : "";
      out += "{\"table\": " + json_str(c.table) + ", \"constraint\": " + json_str(c.constraint) +
             ", \"temperature\": " + json_num(c.temperature) + ", \"draft\": " + json_str(c.shape) +
             ", \"scheme\": " + json_str(c.scheme) +
             ", \"exact_tv\": " + (c.has_exact ? json_num(c.exact_tv) : "null") +
             ", \"mc_tv\": " + json_num(c.mc_tv) + ", \"mc_tv_ci\": [" +
             json_num(c.mc_tv_ci.first) + ", " + json_num(c.mc_tv_ci.second) +
             "], \"p_value\": " + json_num(c.p_value) +
             ", \"samples\": " + std::to_string(c.samples) +
             ", \"detectable_tv\": " + json_num(c.detectable_tv) +
             ", \"outcomes_p_value\": " + (c.has_exact ? json_num(c.outcomes_p_value) : "null") +
             ", \"verdict\": " + json_str(c.verdict) +
             (c.error.empty() ? "" : ", \"error\": " + json_str(c.error)) + "}";
    }
    out += "]}";
  }
  out += "\n],\n\"settings\": {\"tokens\": " + std::to_string(o.tokens) +
         ", \"k\": " + std::to_string(o.k) + ", \"tree\": [";
  out += join(o.tree, ", ");
  out +=
      "], \"temperature\": " + json_num(o.sampling.temperature) +
      ", \"top_k\": " + std::to_string(o.sampling.top_k) +
      ", \"top_p\": " + json_num(o.sampling.top_p) + ", \"min_p\": " + json_num(o.sampling.min_p) +
      ", \"samples\": " + std::to_string(o.samples) + ", \"detect_tv\": " + json_num(o.detect_tv) +
      ", \"seed\": " + std::to_string(o.seed) + ", \"alpha\": " + json_num(o.alpha) +
      ", \"correction\": \"bonferroni per rule\", \"constraints\": [";
  for (size_t i = 0; i < o.constraints.size(); ++i)
    out += (i ? ", " : "") + json_str(o.constraints[i].name);
  out += "], \"tables\": [";
  for (size_t i = 0; i < tables.size(); ++i) {
    if (i) out += ", ";
    out += json_str(tables[i].name);
  }
  out += "]},\n\"label_wrong\": " + std::string(report.any_label_wrong() ? "true" : "false") +
         ",\n\"error\": " + std::string(report.any_error() ? "true" : "false") + "}\n";
  return out;
}

}  // namespace specd
