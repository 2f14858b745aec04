// specd audit [--markov FILE]... [--rule ID]... [--tokens N] [--k K] [--tree B1,B2,...]
//             [--constraints C1,C2,...] [--temperature T] [--top-k K] [--top-p P] [--min-p P]
//             [--samples N] [--seed S]
//             [--alpha A] [--detect-tv D] [--json] [--details] [--plugin-path DIR]...
#include "cmd_audit.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "acceptance/acceptance_rule.hpp"
#include "args.hpp"
#include "audit/audit_engine.hpp"
#include "audit/audit_report.hpp"
#include "audit/config_audit.hpp"
#include "audit/markov_model.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "common/json_writer.hpp"
#include "config/config.hpp"
#include "engine/plugin_info.hpp"
#include "plugin/registry.hpp"

namespace {

const char* kUsage =
    "usage: specd audit [options]\n"
    "\n"
    "Measures the lossless label every installed acceptance rule declares, on Markov toy\n"
    "models where every distribution is known exactly.\n"
    "\n"
    "options:\n"
    "  --markov FILE       a Markov table (TOML: vocab, initial, target, draft); repeatable;\n"
    "                      default: the built-in tables (edge cases included)\n"
    "  --rule ID           audit only this rule (id or name); repeatable\n"
    "  --tokens N          tokens generated after the prompt token (default 3)\n"
    "  --k K               draft chain length (default 2)\n"
    "  --tree B1,B2,...    draft tree branching per depth, for rules that support trees\n"
    "                      (default 2,2; none: chains only)\n"
    "  --constraints LIST  path-dependent targets to audit under, comma-separated: none,\n"
    "                      mask (grammar-like masks on target and draft), mask-target (a\n"
    "                      drafter unaware of the mask), penalties (presence, frequency,\n"
    "                      repeat, logit_bias), all (mask-target + penalties);\n"
    "                      default none,mask,all\n"
    "  --temperature T     sampling temperature (default 1; 0 = greedy)\n"
    "  --top-k K, --top-p P, --min-p P\n"
    "                      the sampling transform, applied to target and draft alike\n"
    "  --samples N         Monte-Carlo runs per case (default 20000)\n"
    "  --detect-tv D       for rules without exact outcomes, raise the runs of each case\n"
    "                      until a TV distance >= D would be detected with 95% power\n"
    "  --seed S            random seed (default 1)\n"
    "  --alpha A           family-wise significance per rule, over its own cases\n"
    "                      (Bonferroni; default 1e-3)\n"
    "  --json              machine-readable output\n"
    "  --details           also print one row per rule and table\n"
    "  --plugin-path DIR   also search DIR for plugins; repeatable\n"
    "  -c, --config FILE   audit a real configuration instead: its speculative run against\n"
    "                      plain decoding on its models (first --tokens tokens, default 1;\n"
    "                      --samples runs per arm, default 2000; -p PROMPT; --set s.k=v)\n"
    "\n"
    "Exit status: 0 no label was found wrong and every rule ran; 1 some rule's label is\n"
    "wrong; 2 usage error; 3 no label was found wrong but some rule (or the audit itself)\n"
    "could not run: its row says why (docs/AUDIT.md).\n";

// Exit statuses (docs/AUDIT.md).
constexpr int kExitLabelWrong = 1;
constexpr int kExitUsage = 2;
constexpr int kExitCouldNotRun = 3;

uint64_t parse_u64(const std::string& option, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || v[0] == '-' || !std::isdigit(static_cast<unsigned char>(v[0])))
    throw specd::UsageError("option " + option + " needs a non-negative integer, got '" + v + "'");
  if (errno == ERANGE)
    throw specd::UsageError("option " + option + " " + v + " is too large (at most 2^64-1)");
  return n;
}

uint32_t parse_u32(const std::string& option, const std::string& v, uint32_t max) {
  const uint64_t n = parse_u64(option, v);
  if (n > max)
    throw specd::UsageError("option " + option + " must be at most " + std::to_string(max));
  return static_cast<uint32_t>(n);
}

std::vector<uint32_t> parse_tree(const std::string& v) {
  std::vector<uint32_t> out;
  if (v == "none") return out;  // chains only
  size_t start = 0;
  while (start <= v.size()) {
    const size_t comma = v.find(',', start);
    const std::string part = v.substr(start, comma == std::string::npos ? comma : comma - start);
    const uint32_t b = parse_u32("--tree", part, 8);
    if (b == 0) throw specd::UsageError("option --tree needs branching factors >= 1");
    out.push_back(b);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.size() > 6) throw specd::UsageError("option --tree allows at most 6 levels");
  specd::check_audit_tree(out, "option --tree " + v);
  return out;
}

// `specd audit -c CONFIG`: the configured speculative run against plain decoding on the
// real models (audit/config_audit.hpp). Exit 1 when an exact label is measurably wrong.
int audit_configuration(const std::string& path, const std::vector<std::string>& overrides,
                        const std::string& prompt, const specd::AuditOptions& options,
                        bool samples_given, bool tokens_given,
                        const std::vector<std::string>& plugin_paths, bool json) {
  specd::Config config = specd::load_config(path, overrides);
  specd::check_required_for_run(config);
  std::vector<std::string> paths = config.plugins.paths;
  paths.insert(paths.end(), plugin_paths.begin(), plugin_paths.end());
  specd::PluginRegistry registry(paths);
  for (const std::string& w : registry.warnings())
    std::fprintf(stderr, "specd audit: warning: %s\n", w.c_str());
  specd::ConfigAuditOptions o;
  o.prompt = prompt;
  // Real vocabularies spread long prefixes thin; the first token keeps the test powerful.
  o.tokens = tokens_given ? options.tokens : 1;
  o.samples = samples_given ? options.samples : 2000;
  o.seed = options.seed;
  o.alpha = options.alpha;
  specd::ConfigAuditResult r = specd::audit_config(config, registry, o);
  if (json) {
    specd::JsonWriter w;
    w.begin_object().key("config").value(path).key("proposer").value(r.proposer);
    w.key("rule").value(r.rule).key("label").value(r.label);
    w.key("temperature").value(r.temperature).key("tokens").value(uint64_t(o.tokens));
    w.key("samples").value(r.samples).key("outcomes").value(uint64_t(r.outcomes));
    w.key("bins").value(uint64_t(r.bins)).key("tv").value(r.tv).key("chi2").value(r.chi2);
    w.key("p_value").value(r.p_value).key("tau").value(r.tau).key("verdict").value(r.verdict);
    w.key("rule_schemes").value(r.rule_schemes).key("rule_verdict").value(r.rule_verdict);
    w.key("rule_summary").value(r.rule_summary);
    w.end_object();
    std::printf("%s\n", w.str().c_str());
  } else {
    std::printf("specd audit -c %s: %s + %s (%s) at temperature %g\n", path.c_str(),
                r.proposer.c_str(), r.rule.c_str(), r.label.c_str(), r.temperature);
    std::printf(
        "first %u tokens after %s, %llu runs per arm (plain vs speculative), %zu "
        "outcomes in %zu bins, tau %.2f\n",
        o.tokens, specd::json_quote(prompt).c_str(), (unsigned long long)r.samples, r.outcomes,
        r.bins, r.tau);
    std::printf("the rule on the Markov toy models, every scheme it declares (%s): %s\n",
                r.rule_schemes.c_str(), r.rule_summary.c_str());
    std::printf("verdict: %s\n", r.summary.c_str());
  }
  specd::flush_stdout();  // before the registry unloads plugins: see flush_stdout
  if (r.verdict == "label-wrong") return kExitLabelWrong;
  return r.verdict == "error" ? kExitCouldNotRun : 0;
}

int audit(int argc, char** argv) {
  specd::cli::Args args(argc, argv);
  specd::AuditOptions options;
  std::vector<std::string> markov_files, rule_ids, plugin_paths;
  bool json = false, details = false;
  bool samples_given = false, tokens_given = false;
  std::string config_path, prompt = "def ";
  std::vector<std::string> overrides;
  while (!args.done()) {
    if (args.match("--help", "-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (args.match("--markov")) {
      markov_files.push_back(args.value());
    } else if (args.match("--rule")) {
      rule_ids.push_back(args.value());
    } else if (args.match("--tokens")) {
      options.tokens = parse_u32("--tokens", args.value(), 12);
      tokens_given = true;
    } else if (args.match("--k")) {
      options.k = parse_u32("--k", args.value(), specd::kMaxAuditDraftNodes);
    } else if (args.match("--tree")) {
      options.tree = parse_tree(args.value());
    } else if (args.match("--constraints")) {
      options.constraints.clear();
      const std::string list = args.value();
      size_t start = 0;
      while (true) {
        const size_t comma = list.find(',', start);
        options.constraints.push_back(specd::audit_constraint(
            list.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (args.match("--temperature")) {
      options.sampling.temperature = args.float_value();
    } else if (args.match("--top-k")) {
      options.sampling.top_k = args.int_value();
    } else if (args.match("--top-p")) {
      options.sampling.top_p = args.float_value();
    } else if (args.match("--min-p")) {
      options.sampling.min_p = args.float_value();
    } else if (args.match("--samples")) {
      options.samples = parse_u64("--samples", args.value());
      if (options.samples < 1) throw specd::UsageError("option --samples must be at least 1");
      samples_given = true;
    } else if (args.match("--config", "-c")) {
      config_path = args.value();
    } else if (args.match("--prompt", "-p")) {
      prompt = args.value();
    } else if (args.match("--set")) {
      overrides.push_back(args.value());
    } else if (args.match("--seed")) {
      options.seed = parse_u64("--seed", args.value());
    } else if (args.match("--alpha")) {
      options.alpha = args.float_value();
    } else if (args.match("--detect-tv")) {
      options.detect_tv = args.float_value();
      if (!(options.detect_tv > 0 && options.detect_tv < 1))
        throw specd::UsageError("option --detect-tv must be in (0, 1)");
    } else if (args.match("--json")) {
      json = true;
    } else if (args.match("--details")) {
      details = true;
    } else if (args.match("--plugin-path")) {
      plugin_paths.push_back(args.value());
    } else {
      args.unknown();
    }
  }
  if (!(options.alpha > 0 && options.alpha < 1))
    throw specd::UsageError("option --alpha must be in (0, 1)");
  if (!config_path.empty())
    return audit_configuration(config_path, overrides, prompt, options, samples_given, tokens_given,
                               plugin_paths, json);
  specd::validate_sampling_params(options.sampling);
  if (options.tokens < 1) throw specd::UsageError("option --tokens must be at least 1");
  if (options.k < 1) throw specd::UsageError("option --k must be at least 1");

  std::vector<specd::MarkovModel> tables;
  for (const std::string& f : markov_files) tables.push_back(specd::load_markov_model(f));
  if (tables.empty()) tables = specd::builtin_markov_models();

  specd::PluginRegistry registry(plugin_paths);
  for (const auto& e : registry.errors())
    std::fprintf(stderr, "specd audit: warning: %s\n", e.message.c_str());
  // A path the user named to audit that gives no rule would make the run a false pass.
  for (const std::string& entry : registry.search_path())
    if (entry != specd::default_plugin_folder() &&
        registry.plugins_from(entry, SPECD_KIND_ACCEPTANCE) == 0)
      throw specd::Error("plugin path '" + entry +
                         "' contributes no acceptance rule, so none of it can be audited (plugin "
                         "files are named specd-accept-<name>.so; see the warnings above)");
  std::vector<const specd::LoadedPlugin*> plugins;
  if (rule_ids.empty()) {
    plugins = registry.of_kind(SPECD_KIND_ACCEPTANCE);
  } else {
    for (const std::string& id : rule_ids)
      plugins.push_back(&registry.require(id, SPECD_KIND_ACCEPTANCE));
  }
  if (plugins.empty())
    throw specd::Error("no acceptance rule plugins found (searched: " + [&] {
      std::string s;
      for (const auto& p : registry.search_path()) {
        if (!s.empty()) s += ", ";
        s += p;
      }
      return s;
    }() + ")");
  // A rule that cannot even be created gets an error row; the others are audited.
  std::vector<std::unique_ptr<specd::AcceptanceRule>> rules;
  std::vector<const specd::AcceptanceRule*> views;
  std::vector<std::pair<size_t, specd::RuleAudit>> failed;  // (position, row)
  for (size_t i = 0; i < plugins.size(); ++i) {
    const specd::LoadedPlugin* p = plugins[i];
    try {
      rules.push_back(std::make_unique<specd::AcceptanceRule>(*p, nullptr));
      views.push_back(rules.back().get());
    } catch (const std::exception& e) {
      failed.emplace_back(
          i, specd::rule_error_row(p->id, p->name, specd::describe_plugin(*p).label, e.what()));
    }
  }

  specd::AuditReport report = specd::run_audit(views, tables, options);
  for (auto& [position, row] : failed)
    report.rules.insert(report.rules.begin() + static_cast<std::ptrdiff_t>(position),
                        std::move(row));
  const std::string text = json ? specd::format_audit_json(report, options, tables)
                                : specd::format_audit_text(report, options, tables, details);
  std::fputs(text.c_str(), stdout);
  specd::flush_stdout();
  if (report.any_label_wrong()) return kExitLabelWrong;
  return report.any_error() ? kExitCouldNotRun : 0;
}

}  // namespace

int run_audit_command(int argc, char** argv) {
  try {
    return audit(argc, argv);
  } catch (const specd::UsageError& e) {
    std::fprintf(stderr, "specd audit: error: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    // Not a verdict on any label: the audit could not run.
    std::fprintf(stderr, "specd audit: error: %s\n", e.what());
    return kExitCouldNotRun;
  }
}
