#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "bench/bench_config.hpp"
#include "bench/bench_runner.hpp"
#include "bench/constructed_sweep.hpp"
#include "bench/report_files.hpp"
#include "bench/rule_audit.hpp"
#include "bench/weight_axis.hpp"
#include "common/error.hpp"
#include "gguf/gguf_reader.hpp"
#include "json_parse.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"

using namespace specd;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace

TEST_CASE("ab end to end on random models: two arms, one task, the three report forms") {
  const std::string dir = test::temp_dir("bench-ab");
  test::RandomLlamaSpec target;
  test::write_random_llama(dir + "/target.gguf", target);
  test::RandomLlamaSpec draft;
  draft.n_embd = 32;
  draft.n_layer = 1;
  draft.n_ff = 64;
  draft.seed = 5;
  test::write_random_llama(dir + "/draft.gguf", draft);
  write(dir + "/tiny.toml",
        "name = \"tiny\"\nkind = \"code-completion\"\nmax_tokens = 8\n"
        "prompts = [\"def f(x):\\n\", \"abab abab\"]\n");
  const std::string bench_toml =
      "[bench]\n"
      "tasks = [\"tiny.toml\"]\n"
      "temperatures = [0.0]\n"
      "repeats = 2\n"
      "audit_samples = 300\n"
      "[base.engine]\nbackend = \"cpu\"\nthreads = 1\nseed = 3\n"
      "[base.target]\nmodel = \"target.gguf\"\n"
      "[[arm]]\nname = \"ngram+exact\"\nstrategy = \"ngram\"\nrule = \"exact-match\"\nk = 3\n"
      "[[arm]]\nname = \"draft+rejection\"\nstrategy = \"draft-model\"\nmodel = \"draft.gguf\"\n"
      "rule = \"rejection\"\nk = 2\n[arm.proposer]\nmode = \"sample\"\n";
  write(dir + "/ab.toml", bench_toml);

  bench::BenchConfig config = bench::load_bench_config(dir + "/ab.toml");
  REQUIRE(config.arms.size() == 2);
  bench::RunPlan plan = bench::plan_from_config(config, "ab");
  REQUIRE(plan.cells.size() == 1);
  CHECK(plan.cells[0].prompts.size() == 2);
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  bench::RuleAuditCache audits(registry, config.audit_samples);
  bench::BenchResults results = bench::run_bench(plan, registry, audits);
  REQUIRE(results.arms.size() == 3);
  CHECK(results.arms[0].name == "plain");
  for (const auto& arm : results.arms) {
    REQUIRE(arm.cells.size() == 1);
    CHECK(arm.cells[0].generated == 2 * 2 * 8);  // prompts × repeats × tokens
  }
  CHECK(results.arms[1].rule == "exact-match");
  CHECK(results.arms[1].label == "exact");
  CHECK(results.arms[1].verdict == "lossless");
  CHECK(results.arms[2].strategy == "draft-model");
  CHECK(results.arms[2].cells[0].drafted > 0);
  CHECK(results.arms[2].cells[0].per_position.size() == 2);
  CHECK(!results.arms[2].lossy);

  const std::string out = dir + "/out";
  bench::write_reports(results, out);
  const test::Json j = test::parse_json(read(out + "/report.json"));
  CHECK(j["arms"].a.size() == 3);
  for (const auto& arm : j["arms"].a)
    for (const char* k : {"label", "verdict"}) CHECK(arm.has(k));
  CHECK(j["arms"].a[2]["cells"].a[0]["speedup_ci"].a.size() == 2);
  CHECK(read(out + "/report.md").find("## Pairwise") != std::string::npos);
  for (const char* svg : {"speedup.svg", "per_position.svg", "predicted.svg"})
    CHECK(read(out + "/" + svg).find("</svg>") != std::string::npos);
}

TEST_CASE("bench config: shorthand keys, tables and mistakes") {
  const auto cfg = bench::parse_bench_config(
      "[bench]\ntasks = [\"code\"]\ntemperatures = [0, 0.7]\n"
      "[base.sampling]\ntop_k = 40\n"
      "[[arm]]\nname = \"a\"\nstrategy = \"ngram\"\nk = \"auto\"\nallow_lossy = true\n"
      "[arm.acceptance]\nepsilon = 0.1\n",
      "/x/configs/b.toml");
  REQUIRE(cfg.arms.size() == 1);
  CHECK(cfg.arms[0].k_text == "auto");
  CHECK(cfg.temperatures.size() == 2);
  CHECK(cfg.task_files[0] == "/x/bench/tasks/code.toml");
  const auto& o = cfg.arms[0].overrides;
  CHECK(std::find(o.begin(), o.end(), "proposer.k=\"auto\"") != o.end());
  CHECK(std::find(o.begin(), o.end(), "acceptance.epsilon=0.10000000000000001") != o.end());
  CHECK(cfg.base_overrides == std::vector<std::string>{"sampling.top_k=40"});
  CHECK_THROWS_AS(bench::parse_bench_config("[bench]\ntasks=[\"c\"]\n", "b.toml"), UsageError);
  CHECK_THROWS_AS(
      bench::parse_bench_config("[bench]\ntasks=[\"c\"]\n[[arm]]\nname=\"a\"\nbogus=1\n", "b.toml"),
      UsageError);
  CHECK_THROWS_AS(
      bench::parse_bench_config("[bench]\ntasks=[\"c\"]\n[[arm]]\nname=\"plain\"\n", "b.toml"),
      UsageError);
}

TEST_CASE("bench config: target and draft weight types are independent axes") {
  const auto cfg = bench::parse_bench_config(
      "[construct]\nsizes = [\"tiny\"]\nagreements = [0.9]\nk = [2, 4]\n"
      "types = [\"f16\", \"q4_K_M\"]\ndraft_types = [\"f16\", \"q8_0\"]\n",
      "/x/configs/c.toml");
  CHECK(cfg.construct.types == std::vector<std::string>{"f16", "q4_K_M"});
  CHECK(cfg.construct.draft_types == std::vector<std::string>{"f16", "q8_0"});
  const std::string dir = test::temp_dir("bench-draft-types");
  const bench::RunPlan plan = bench::plan_constructed(cfg, "bench", dir);
  CHECK(plan.arms.size() == 4);  // 1 agreement x 2 draft types x 2 k
  CHECK(std::any_of(plan.arms.begin(), plan.arms.end(),
                    [](const bench::ArmSpec& a) { return a.name == "agree 0.90 draft q8_0 k=4"; }));
  CHECK(plan.cells.size() == 2);  // 1 size x 2 target types x 1 temperature
  CHECK(std::filesystem::exists(dir + "/draft-a0.90-q8_0.gguf"));
  CHECK(std::filesystem::exists(dir + "/target-tiny-q4_K_M.gguf"));
  // Drafts are 64 wide: a k-quant preset falls back as llama-quantize does (q4_K -> q5_0,
  // q6_K -> q8_0), and an unknown preset is refused naming the key.
  const auto k_drafts = bench::parse_bench_config(
      "[construct]\nsizes = [\"tiny\"]\nagreements = [0.9]\nk = [2]\n"
      "draft_types = [\"q4_K_M\"]\n",
      "/x/configs/c.toml");
  bench::plan_constructed(k_drafts, "bench", dir);
  {
    const GgufFile f = GgufFile::open(dir + "/draft-a0.90-q4_K_M.gguf");
    CHECK(f.require_tensor("blk.0.attn_q.weight").type == GgmlType::kQ5_0);
    CHECK(f.require_tensor("blk.0.ffn_down.weight").type == GgmlType::kQ8_0);  // use_more_bits
  }
  try {
    bench::parse_bench_config("[construct]\ndraft_types = [\"q4_K_X\"]\n", "c.toml");
    FAIL("an unknown draft type was accepted");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("c.toml: [construct] draft_types: weight type 'q4_K_X' is "
                                     "not one of f32, f16, bf16, q8_0") != std::string::npos);
  }
  CHECK_THROWS_AS(bench::parse_bench_config("[construct]\ntypes = [\"q3\"]\n", "c.toml"),
                  UsageError);
  // The sweep's targets and drafts are dense llama models: a mixture-of-experts size is
  // refused when the file is read, naming the key.
  CHECK_THROWS_WITH_AS(
      bench::parse_bench_config("[construct]\nsizes = [\"tiny\", \"moe-3b\"]\n", "c.toml"),
      doctest::Contains("c.toml: [construct] sizes: constructed model size 'moe-3b' is a "
                        "mixture of experts"),
      UsageError);
  CHECK_THROWS_WITH_AS(
      bench::parse_bench_config("[construct]\ndraft_size = \"moe-3b\"\n", "c.toml"),
      doctest::Contains("c.toml: [construct] draft_size: constructed drafts are dense llama"),
      UsageError);
}

// Every arm × cell is checked before anything runs: a greedy-exact rule in a sampled cell
// is refused (unless the arm allows lossy rules), naming the bench file, arm, task and
// temperature; a lossy-allowed greedy arm at that temperature and a greedy arm in a greedy
// cell pass.
TEST_CASE("bench: a greedy-exact arm in a sampled cell is refused before anything runs") {
  const std::string dir = test::temp_dir("bench-greedy-hot");
  test::write_random_llama(dir + "/target.gguf", {});
  write(dir + "/tiny.toml",
        "name = \"tiny\"\nkind = \"code-completion\"\nmax_tokens = 4\nprompts = [\"ab\"]\n");
  auto bench_file = [&](const std::string& tasks, const std::string& arm_extra) {
    write(dir + "/b.toml", "[bench]\ntasks = [" + tasks +
                               "]\n[base.engine]\nbackend = \"cpu\"\nthreads = 1\n"
                               "[base.target]\nmodel = \"target.gguf\"\n"
                               "[[arm]]\nname = \"ngram+greedy\"\nstrategy = \"ngram\"\n"
                               "rule = \"greedy\"\nk = 3\n" +
                               arm_extra);
    return bench::plan_from_config(bench::load_bench_config(dir + "/b.toml"), "bench");
  };
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  std::string message;
  try {
    bench::check_plan(bench_file("\"tiny.toml@0\", \"tiny.toml@0.7\"", ""), registry);
  } catch (const UsageError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find(dir + "/b.toml: arm 'ngram+greedy', task tiny at temperature 0.7: ") == 0);
  CHECK(message.find("rule 'greedy' is greedy-exact") != std::string::npos);
  CHECK_NOTHROW(bench::check_plan(bench_file("\"tiny.toml@0\"", ""), registry));
  CHECK_NOTHROW(
      bench::check_plan(bench_file("\"tiny.toml@0.7\"", "allow_lossy = true\n"), registry));
}

// [bench] target_types × draft_types: one cell per target type (plain decoding of that
// copy is its baseline), one arm per draft type for arms with a model (ngram runs once),
// greedy outputs equal plain ones in every cell, and report.md gets the precision tables.
TEST_CASE("bench: target and draft weight types as independent axes on quantized copies") {
  const std::string dir = test::temp_dir("bench-weight-axis");
  test::write_random_llama(dir + "/target.gguf", {});
  test::RandomLlamaSpec draft;
  draft.n_layer = 1;
  draft.seed = 4;
  test::write_random_llama(dir + "/draft.gguf", draft);
  write(
      dir + "/tiny.toml",
      "name = \"tiny\"\nkind = \"code-completion\"\nmax_tokens = 6\nprompts = [\"ab\", \"cd\"]\n");
  write(dir + "/b.toml",
        "[bench]\ntasks = [\"tiny.toml@0\"]\nrepeats = 1\naudit_samples = 200\n"
        "target_types = [\"f16\", \"q8_0\"]\ndraft_types = [\"f16\", \"q4_0\"]\n"
        "[base.engine]\nbackend = \"cpu\"\nthreads = 1\n"
        "[base.target]\nmodel = \"target.gguf\"\n"
        "[[arm]]\nname = \"draft\"\nstrategy = \"draft-model\"\nmodel = \"draft.gguf\"\n"
        "rule = \"greedy\"\nk = 3\n[arm.proposer]\nmode = \"greedy\"\n"
        "[[arm]]\nname = \"ngram\"\nstrategy = \"ngram\"\nrule = \"exact-match\"\nk = 3\n");
  const bench::BenchConfig config = bench::load_bench_config(dir + "/b.toml");
  bench::RunPlan plan = bench::plan_from_config(config, "bench");
  bench::apply_weight_axis(plan, config, dir + "/models");
  REQUIRE(plan.cells.size() == 2);
  CHECK(plan.cells[1].task == "tiny · target q8_0");
  CHECK(plan.cells[1].target_type == "q8_0");
  REQUIRE(plan.arms.size() == 3);
  CHECK(plan.arms[1].name == "draft · draft q4_0");
  CHECK(plan.arms[1].base_name == "draft");
  CHECK(plan.arms[2].name == "ngram");
  {
    const std::string copy = dir + "/models";
    size_t q8 = 0, q4 = 0;
    for (const auto& e : std::filesystem::directory_iterator(copy)) {
      const std::string name = e.path().filename().string();
      q8 += name.starts_with("target-") && name.ends_with("-q8_0.gguf");
      q4 += name.starts_with("draft-") && name.ends_with("-q4_0.gguf");
    }
    CHECK(q8 == 1);
    CHECK(q4 == 1);
  }
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  bench::RuleAuditCache audits(registry, config.audit_samples);
  const bench::BenchResults results = bench::run_bench(plan, registry, audits);
  for (size_t a = 1; a < results.arms.size(); ++a)
    for (const bench::CellResult& c : results.arms[a].cells) {
      CAPTURE(results.arms[a].name);
      CAPTURE(c.task);
      CHECK(c.output_compared == 2);
      CHECK(c.output_differs == 0);
    }
  const std::string out = dir + "/out";
  bench::write_reports(results, out);
  const std::string md = read(out + "/report.md");
  CHECK(md.find("## Weight precision") != std::string::npos);
  CHECK(md.find("### draft — tiny, T=0") != std::string::npos);
  CHECK(md.find("| target \\ draft | f16 | q4_0 | plain tok/s |") != std::string::npos);
  CHECK(md.find("| q8_0 |") != std::string::npos);
  CHECK(md.find("### ngram — tiny, T=0") != std::string::npos);
  const std::string json = read(out + "/report.json");
  CHECK(json.find("\"draft_type\":\"q4_0\"") != std::string::npos);
  CHECK(json.find("\"target_type\":\"q8_0\"") != std::string::npos);
  // A second planning reuses the copies (their records match): no file is rewritten.
  std::vector<std::pair<std::string, std::filesystem::file_time_type>> times;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/models"))
    times.emplace_back(e.path().string(), e.last_write_time());
  bench::RunPlan again = bench::plan_from_config(config, "bench");
  bench::apply_weight_axis(again, config, dir + "/models");
  for (const auto& [path, time] : times) {
    CAPTURE(path);
    CHECK(std::filesystem::last_write_time(path) == time);
  }
}

// The memory-bound pair's benchmark (docs/PERFORMANCE.md): one cell, one greedy arm on the
// q4_K_M 95 M constructed target.
TEST_CASE("configs/demo-quant.toml: one q4_K_M 95m cell, one greedy arm") {
  const bench::BenchConfig cfg =
      bench::load_bench_config(std::string(SPECD_SOURCE_DIR) + "/configs/demo-quant.toml");
  REQUIRE(cfg.construct.enabled);
  CHECK(cfg.construct.sizes == std::vector<std::string>{"95m"});
  CHECK(cfg.construct.types == std::vector<std::string>{"q4_K_M"});
  CHECK(cfg.construct.agreements.size() == 1);
  CHECK(cfg.construct.ks == std::vector<uint32_t>{4});
  CHECK(cfg.temperatures == std::vector<double>{0.0});
  CHECK(cfg.construct.rule == "greedy");
}

// docs/PERFORMANCE.md's quantized-pair table: every target type crossed with every draft type.
TEST_CASE("configs/ab-quant.toml: target and draft presets on the shipped pair") {
  const bench::BenchConfig cfg =
      bench::load_bench_config(std::string(SPECD_SOURCE_DIR) + "/configs/ab-quant.toml");
  CHECK(cfg.target_types == std::vector<std::string>{"f16", "q8_0", "q4_K_M", "q2_K"});
  CHECK(cfg.draft_types == std::vector<std::string>{"f16", "q8_0", "q4_K_M", "q2_K"});
  REQUIRE(cfg.arms.size() == 1);
  CHECK(cfg.task_files.size() == 2);
}
