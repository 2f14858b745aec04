// specd bench|ab -c FILE --out DIR [--set section.key=value]... [--plugin-path DIR]...
// specd bench --construct --out DIR [--arch A] [--size S] [--type T] [--draft-size S] [--vocab N]
//             [--context N] [--text T] [--agreement A]...
#include "cmd_bench.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "args.hpp"
#include "bench/bench_config.hpp"
#include "bench/bench_runner.hpp"
#include "bench/constructed_dflash.hpp"
#include "bench/constructed_eagle3.hpp"
#include "bench/constructed_model.hpp"
#include "bench/constructed_sweep.hpp"
#include "bench/report_files.hpp"
#include "bench/rule_audit.hpp"
#include "bench/shuffled_vocabulary.hpp"
#include "bench/weight_axis.hpp"
#include "bench/weight_copy.hpp"
#include "bench/weight_presets.hpp"
#include "common/error.hpp"
#include "common/file_io.hpp"
#include "plugin/registry.hpp"

namespace {

const char* kHelp =
    "usage: specd bench -c FILE --out DIR [options]\n"
    "       specd ab    -c FILE --out DIR [options]\n"
    "       specd bench --construct --out DIR [--arch A] [--size S] [--type T] [--draft-size S]\n"
    "                   [--draft-type T] [--vocab N] [--context N] [--text T] [--agreement A]...\n"
    "       specd bench --quantize IN --type T --out FILE\n"
    "\n"
    "Runs every arm of the bench file and plain decoding on the same prompts, interleaved,\n"
    "with the same seed per prompt, and writes report.json, report.md and SVG charts to DIR.\n"
    "`ab` adds the pairwise comparison of each arm with the first. Schema: docs/BENCH.md.\n"
    "\n"
    "options:\n"
    "  -c, --config FILE   the bench file\n"
    "  --out DIR           where the reports go\n"
    "  --set KEY=VALUE     override a [base] key (section.key=value); repeatable\n"
    "  --repeats N         override [bench] repeats\n"
    "  --prompts N         override [bench] prompts (first N of each task)\n"
    "  --plugin-path DIR   also search DIR for plugins; repeatable\n"
    "  --models-dir DIR    where constructed models and quantized copies are written and\n"
    "                      kept for the next run (default: a temp folder, removed after)\n"
    "  --construct         only write constructed models (reused when already there):\n"
    "                      target.gguf of --size (tiny, 0.1b, 95m, 0.5b, 1.5b) in --type,\n"
    "                      and draft-A.gguf per --agreement A in --draft-type (default f16):\n"
    "                      one small layer, or --draft-size's shape (e.g. 0.1b), and\n"
    "                      draft-A-shuffled.gguf, the same draft in a shuffled vocabulary,\n"
    "                      eagle3-A.gguf, an EAGLE-3 head for the target, dflash-A.gguf,\n"
    "                      a DFlash drafter for it (its first token counts); --arch qwen35:\n"
    "                      the target a Qwen3.5 hybrid (gated DeltaNet layers) with an MTP\n"
    "                      layer agreeing on the first --agreement; --arch qwen3moe: the\n"
    "                      target a Qwen3-MoE mixture of experts, --size tiny (8 experts,\n"
    "                      2 per token) or moe-3b (64 experts of 512, 8 per token: 3 B\n"
    "                      parameters, 0.5 B active with --vocab 32000), drafts dense llama\n"
    "                      models; --arch gpt-oss: the same shapes as gpt-oss lays them\n"
    "                      out (biases, sinks, YaRN, a window of 128 on even layers);\n"
    "                      --vocab N tokens in all (default 264; e.g. 32000,\n"
    "                      128256, 151936); --context N: their context length (default\n"
    "                      1024, 64..131072); --text T: the planted map spells T instead of\n"
    "                      walking the printable bytes (its words become tokens from id 264\n"
    "                      on: --vocab must leave room; greedy decoding writes T over and over)\n"
    "  --quantize IN       only write a copy of the GGUF model IN with its matrices in --type\n"
    "                      to the file --out (weight precision as an axis)\n"
    "Weight types (--type, [bench] target_types / draft_types, [construct] types):\n"
    "  llama.cpp's presets f32, f16, bf16, q8_0, q6_K, q5_K_M, q5_K_S, q5_1, q5_0, q4_K_M,\n"
    "  q4_K_S, q4_1, q4_0, iq4_xs, iq4_nl, mxfp4_moe, q3_K_L, q3_K_M, q3_K_S, q2_K\n"
    "  (mxfp4_moe: a mixture of experts' expert tensors in mxfp4, everything else q8_0).\n";

// "12.3 M parameters", and for a mixture of experts those one token reads:
// "2959.4 M parameters, 493.2 M active".
std::string parameters_text(const specd::bench::ConstructedSpec& spec) {
  const uint64_t all = specd::bench::constructed_parameters(spec);
  const uint64_t active = specd::bench::constructed_active_parameters(spec);
  char text[96];
  std::snprintf(text, sizeof text, "%.1f M parameters", double(all) / 1e6);
  std::string out = text;
  if (active == all) return out;
  std::snprintf(text, sizeof text, ", %.1f M active", double(active) / 1e6);
  return out + text;
}

int construct_only(const std::string& out, const std::string& arch, const std::string& size,
                   const std::string& type, const std::string& draft_size,
                   const std::string& draft_type, uint32_t vocab, uint32_t context,
                   const std::string& text, std::vector<double> agreements) {
  std::filesystem::create_directories(out);
  if (agreements.empty()) agreements = {1.0};
  specd::bench::ConstructedSpec target = specd::bench::constructed_preset(size, arch);
  target.weights = specd::bench::weight_preset(type).name;
  target.vocab = vocab;
  target.n_ctx = context;
  target.text = text;
  specd::bench::check_constructed_text(target);
  target.mtp_agreement = agreements.front();  // a hybrid's MTP layer: the first agreement
  const std::string path = out + "/target.gguf";
  const bool wrote = specd::bench::ensure_constructed_model(path, target);
  std::printf("%s  (%s%s %s, %s, constructed model%s)\n", path.c_str(),
              arch == "llama" ? "" : (arch + " ").c_str(), size.c_str(), target.weights.c_str(),
              parameters_text(target).c_str(), wrote ? "" : ", already there");
  if (target.n_expert)
    std::printf("  %u experts of %u per layer, %u per token\n", target.n_expert, target.n_ff_exp,
                target.n_expert_used);
  if (arch == "qwen35")
    std::printf(
        "  its MTP layer (blk.%u.nextn) agrees on %.0f%% of the map: [proposer] kind = "
        "\"mtp\" drafts with it\n",
        target.n_layer, target.mtp_agreement * 100);
  for (double a : agreements) {
    char name[64];
    std::snprintf(name, sizeof name, "/draft-%.2f.gguf", a);
    specd::bench::ConstructedSpec draft = specd::bench::constructed_draft(a, draft_size);
    draft.weights = specd::bench::weight_preset(draft_type).name;
    draft.vocab = vocab;
    draft.n_ctx = context;
    draft.text = text;
    const bool wrote_draft = specd::bench::ensure_constructed_model(out + name, draft);
    std::printf("%s%s  (%s%s draft agreeing on %.0f%% of the map, %.1f M parameters%s)\n",
                out.c_str(), name, draft_size.empty() ? "" : (draft_size + " ").c_str(),
                draft.weights.c_str(), a * 100,
                double(specd::bench::constructed_parameters(draft)) / 1e6,
                wrote_draft ? "" : ", already there");
    char shuffled[64];
    std::snprintf(shuffled, sizeof shuffled, "/draft-%.2f-shuffled.gguf", a);
    if (wrote_draft || !std::filesystem::exists(out + shuffled))
      specd::bench::write_shuffled_vocabulary(out + name, out + shuffled, 1);
    std::printf("%s%s  (the same draft with its token ids shuffled: another vocabulary)\n",
                out.c_str(), shuffled);
    if (arch != "llama") continue;  // the heads below are made for llama targets
    std::snprintf(name, sizeof name, "/dflash-%.2f.gguf", a);
    specd::bench::write_constructed_dflash(out + name, target, a);
    std::printf(
        "%s%s  (DFlash drafter in llama.cpp's layout agreeing on %.0f%% of the map, "
        "its first drafted token)\n",
        out.c_str(), name, a * 100);
    std::snprintf(name, sizeof name, "/eagle3-%.2f.gguf", a);
    specd::bench::write_constructed_eagle3(out + name, target, a);
    std::printf("%s%s  (EAGLE-3 head in llama.cpp's layout agreeing on %.0f%% of the map)\n",
                out.c_str(), name, a * 100);
  }
  return 0;
}

}  // namespace

int run_bench_command(int argc, char** argv) {
  const std::string mode = argv[0];
  specd::cli::Args args(argc, argv);
  std::string config_path, out, models_dir, quantize,
      size = "tiny", type = "f16", draft_type = "f16", draft_size, arch = "llama", text;
  uint32_t vocab = 264, context = 1024;
  std::vector<std::string> sets, plugin_paths;
  std::vector<double> agreements;
  bool construct = false;
  int repeats = 0, prompts = 0;  // 0 = not given
  while (!args.done()) {
    if (args.match("--help", "-h")) {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (args.match("--config", "-c")) {
      config_path = args.value();
    } else if (args.match("--out")) {
      out = args.value();
    } else if (args.match("--set")) {
      sets.push_back(args.value());
    } else if (args.match("--plugin-path")) {
      plugin_paths.push_back(args.value());
    } else if (args.match("--models-dir")) {
      models_dir = args.value();
    } else if (args.match("--repeats")) {
      repeats = args.int_value();
      if (repeats < 1) throw specd::UsageError("option --repeats must be at least 1");
    } else if (args.match("--prompts")) {
      prompts = args.int_value();
      if (prompts < 1)
        throw specd::UsageError(
            "option --prompts must be at least 1 (the first N prompts of "
            "each task; leave it out for all)");
    } else if (args.match("--quantize")) {
      quantize = args.value();
    } else if (args.match("--construct")) {
      construct = true;
    } else if (args.match("--size")) {
      size = args.value();
    } else if (args.match("--arch")) {
      arch = args.value();
      specd::bench::check_constructed_architecture(arch);
    } else if (args.match("--type")) {
      type = args.value();
    } else if (args.match("--draft-type")) {
      draft_type = args.value();
    } else if (args.match("--draft-size")) {
      draft_size = args.value();
      specd::bench::constructed_draft(1.0, draft_size);  // an unknown or MoE size is refused here
    } else if (args.match("--vocab")) {
      const int64_t v = args.int_value();
      specd::bench::check_constructed_vocab(v < 0 ? 0 : static_cast<uint64_t>(v));
      vocab = static_cast<uint32_t>(v);
    } else if (args.match("--context")) {
      const int64_t n = args.int_value();
      if (n < 64 || n > 131072)
        throw specd::UsageError("option --context " + std::to_string(n) +
                                " must lie in [64, 131072] (the constructed models' context)");
      context = static_cast<uint32_t>(n);
    } else if (args.match("--text")) {
      text = args.value();
      specd::bench::planted_words(text);  // an empty or oversized text is refused here
    } else if (args.match("--agreement")) {
      const double a = args.float_value();
      if (!(a >= 0 && a <= 1)) {
        char text[64];
        std::snprintf(text, sizeof text, "option --agreement %g must lie in [0, 1]", a);
        throw specd::UsageError(std::string(text) + " (the fraction of the map the draft follows)");
      }
      agreements.push_back(a);
    } else {
      args.unknown();
    }
  }
  if (out.empty()) throw specd::UsageError(mode + ": --out DIR is required");
  if (construct)
    return construct_only(out, arch, size, type, draft_size, draft_type, vocab, context, text,
                          agreements);
  if (!quantize.empty()) {
    const specd::bench::WeightPreset preset = specd::bench::weight_preset(type);
    const size_t n = specd::bench::write_weight_copy(quantize, out, preset);
    std::printf("%s: %zu matrices converted for %s\n", out.c_str(), n, preset.name.c_str());
    return 0;
  }
  if (config_path.empty()) throw specd::UsageError(mode + ": -c FILE is required");

  specd::bench::BenchConfig config = specd::bench::load_bench_config(config_path);
  config.base_overrides.insert(config.base_overrides.end(), sets.begin(), sets.end());
  if (repeats > 0) config.repeats = static_cast<uint32_t>(repeats);
  if (prompts > 0) config.prompts = static_cast<uint32_t>(prompts);

  specd::bench::RunPlan plan;
  const bool writes_models =
      config.construct.enabled || !config.target_types.empty() || !config.draft_types.empty();
  const bool temporary_models = writes_models && models_dir.empty();
  if (temporary_models)
    models_dir = (std::filesystem::temp_directory_path() /
                  ("specd-bench-models-" + std::to_string(::getpid())))
                     .string();
  if (writes_models) std::fprintf(stderr, "models in %s\n", models_dir.c_str());
  // A temporary folder goes whatever happens (a refused arm, an interrupted run).
  struct RemoveOnExit {
    std::string dir;
    ~RemoveOnExit() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } remove_temporary{temporary_models ? models_dir : std::string()};
  if (config.construct.enabled) {
    plan = specd::bench::plan_constructed(config, mode, models_dir);
  } else {
    plan = specd::bench::plan_from_config(config, mode);
    specd::bench::apply_weight_axis(plan, config, models_dir);
  }
  if (plan.cells.empty()) throw specd::UsageError(config_path + ": nothing to run");

  // The base configuration's plugin paths, then the command line's.
  specd::Config base = specd::bench::cell_config(plan, plan.cells[0], nullptr);
  std::vector<std::string> paths = base.plugins.paths;
  paths.insert(paths.end(), plugin_paths.begin(), plugin_paths.end());
  specd::PluginRegistry registry(paths);
  for (const std::string& w : registry.warnings())
    std::fprintf(stderr, "specd bench: warning: %s\n", w.c_str());
  specd::bench::RuleAuditCache audits(registry, config.audit_samples);

  specd::bench::BenchResults results = specd::bench::run_bench(plan, registry, audits);
  specd::bench::write_reports(results, out);
  std::printf("%s: %zu arms × %zu cells in %.1f s; reports in %s (report.md, report.json, *.svg)\n",
              mode.c_str(), results.arms.size() - 1, plan.cells.size(), results.wall_s,
              out.c_str());
  specd::flush_stdout();  // before the registry unloads plugins: see flush_stdout
  return 0;
}
