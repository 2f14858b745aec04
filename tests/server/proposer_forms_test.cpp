// The two forms of a proposer plugin (proposer.h) in `specd run`'s engine and in the
// scheduler, on the shipped models, with one drafting rule built both ways
// (lookup_proposer.cpp): a per-sequence plugin built against ABI 0.4 still loads and runs
// through the host's adapter, the batched one drafts for several sequences in one call, both
// give plain greedy decoding's tokens, and a sequence the batched proposer fails ends alone
// while the others finish as they would have.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "batching/scheduler.hpp"
#include "batching/shared_engine.hpp"
#include "batching_jobs.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "plugin/registry.hpp"
#include "shipped_models.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace specd;
using namespace specd::batching;

namespace {

const std::string& kModels = test::kShippedModels;

bool have_models() {
  if (std::filesystem::exists(kModels + "/target.gguf")) return true;
  ::specd::test::skip_missing("the shipped target is missing from ", kModels);
  return false;
}

Config config(const std::string& proposer, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"engine.backend=\"cpu\"",
                                "engine.threads=1",
                                "target.model=\"" + kModels + "/target.gguf\"",
                                "proposer.kind=\"" + proposer + "\"",
                                "proposer.k=3",
                                "acceptance.rule=\"exact-match\"",
                                "sampling.temperature=0",
                                "sampling.max_tokens=32",
                                "sampling.ignore_eos=true",
                                "server.max_sequences=8",
                                "server.queue_limit=16"};
  o.insert(o.end(), extra.begin(), extra.end());
  return parse_config("", "forms.toml", o);
}

PluginRegistry& registry() {
  static PluginRegistry r{std::vector<std::string>{SPECD_TEST_PROPOSERS}};
  return r;
}

const std::vector<std::string> kPrompts = {
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
    "The quick brown fox jumps over the lazy dog. The quick brown",
    "for i in range(10):\n    for j in range(10):\n        print(i,",
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,"};

struct Outcome {
  std::vector<int32_t> tokens;
  std::string error;
  uint64_t drafted = 0;
};

std::vector<Outcome> serve(const Config& c) {
  SharedEngine engines(c, registry());
  Scheduler scheduler(engines, c.server.queue_limit);
  std::vector<std::promise<Outcome>> done(kPrompts.size());
  std::vector<std::shared_ptr<Job>> jobs;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    auto job = test::job_with_callbacks();
    job->request.prompt = test::encode_prompt(scheduler, kPrompts[i]);
    job->request.sampling = c.sampling;
    job->request.max_tokens = c.sampling.max_tokens;
    auto* d = &done[i];
    test::callbacks(*job).on_start = [d](const Refusal* e) {
      if (e) d->set_value(Outcome{{}, e->what(), 0});
    };
    test::callbacks(*job).on_text = [](const std::string&) {};
    test::callbacks(*job).on_done = [d](const GenerationResult* r, const Refusal* e) {
      d->set_value(r ? Outcome{r->tokens, "", r->stats.drafted} : Outcome{{}, e->what(), 0});
    };
    jobs.push_back(job);
  }
  scheduler.run_exclusive([&] {
    for (auto& job : jobs) REQUIRE(scheduler.submit(job));
  });
  std::vector<Outcome> out;
  for (auto& d : done) out.push_back(d.get_future().get());
  return out;
}

std::vector<std::vector<int32_t>> plain_tokens() {
  static const std::vector<std::vector<int32_t>> tokens = [] {
    Engine engine(config("none"), registry());
    std::vector<std::vector<int32_t>> t;
    for (const std::string& p : kPrompts) t.push_back(engine.generate(p).tokens);
    return t;
  }();
  return tokens;
}

}  // namespace

TEST_CASE("a per-sequence proposer built against ABI 0.4 runs through the adapter") {
  if (!have_models()) return;
  const auto plain = plain_tokens();
  Engine engine(config("lookup-old"), registry());
  uint64_t drafted = 0;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    const GenerationResult r = engine.generate(kPrompts[i]);
    CHECK(r.tokens == plain[i]);
    drafted += r.stats.drafted;
  }
  CHECK(drafted > 0);
  // Several sequences at once: one plugin object each, made with the same parameters.
  const std::vector<Outcome> served = serve(config("lookup-old"));
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    REQUIRE_MESSAGE(served[i].error.empty(), served[i].error);
    CHECK(served[i].tokens == plain[i]);
  }
}

TEST_CASE("a batched proposer drafts for several sequences in one call, with the same tokens") {
  if (!have_models()) return;
  const auto plain = plain_tokens();
  const std::string report =
      (std::filesystem::temp_directory_path() / "specd-lookup-batched-report.txt").string();
  std::filesystem::remove(report);
  {
    const Config c = config("lookup-batched", {"proposer.report=\"" + report + "\""});
    const std::vector<Outcome> served = serve(c);
    uint64_t drafted = 0;
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      REQUIRE_MESSAGE(served[i].error.empty(), served[i].error);
      CHECK(served[i].tokens == plain[i]);
      drafted += served[i].drafted;
    }
    CHECK(drafted > 0);
  }
  std::ifstream in(report);
  unsigned most = 0;
  REQUIRE(static_cast<bool>(in >> most));
  CHECK(most >= 2u);  // one call carried several sequences
  std::filesystem::remove(report);
  // `specd run`'s path: the same proposer with one sequence.
  Engine engine(config("lookup-batched"), registry());
  CHECK(engine.generate(kPrompts[0]).tokens == plain[0]);
}

TEST_CASE("a sequence the batched proposer fails ends alone; the others finish unchanged") {
  if (!have_models()) return;
  const auto plain = plain_tokens();
  // The token of "fox" is in the second prompt only.
  Engine probe(config("none"), registry());
  const std::vector<int32_t> fox = probe.tokenizer().encode(" fox", false);
  REQUIRE(!fox.empty());
  const std::vector<Outcome> served =
      serve(config("lookup-batched", {"proposer.fail_token=" + std::to_string(fox.back())}));
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    INFO("request " << i);
    if (i == 1) {
      CHECK(served[i].error.find("lookup was asked to fail") != std::string::npos);
      continue;
    }
    REQUIRE_MESSAGE(served[i].error.empty(), served[i].error);
    CHECK(served[i].tokens == plain[i]);
  }
}
