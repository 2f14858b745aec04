// The continuous-batching scheduler on the shipped models: a request's greedy output alone
// equals its output among 15 concurrent others, token for token, with speculation off, with
// ngram and with the draft model (and all three mixed in one batch); requests beyond
// max_sequences or the KV budget wait and then run; cancellation; run_exclusive; the prefix
// cache changes no output.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "batching/scheduler.hpp"
#include "batching/shared_engine.hpp"
#include "batching_jobs.hpp"
#include "bench/constructed_model.hpp"
#include "bench/shuffled_vocabulary.hpp"
#include "config/config.hpp"
#include "models/llama_model.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "shipped_models.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"

using namespace specd;
using namespace specd::batching;

namespace {

const std::string& kModels = test::kShippedModels;

Config config(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"server.max_sequences=16", "server.queue_limit=64"};
  o.insert(o.end(), extra.begin(), extra.end());
  return test::shipped_pair_config(24, o);
}

// A speculative setting of a request.
StrategyChoice setting(const std::string& name) {
  StrategyChoice s;
  if (name == "none") {
    s.proposer = "none";
  } else if (name == "ngram") {
    s.proposer = "ngram";
    s.rule = "exact-match";
  } else if (name == "auto") {
    s.k_auto = true;  // the configured draft model, k chosen per round under the load
  }                   // "draft-model": the configured proposer and rule
  return s;
}

std::vector<std::string> prompts() {
  std::vector<std::string> p = {
      "Once upon a time",
      "def fibonacci(n):",
      "The capital of France is",
      "import numpy as np\nimport",
      "In 1492,",
      "for (int i = 0; i < n; ++i) {",
      "She opened the door and",
      "SELECT name FROM users WHERE",
      "The quick brown fox",
      "1, 2, 3, 4, 5,",
      "Dear Sir or Madam,",
      "class Stack:\n    def __init__(self):",
      "It was a dark and stormy night;",
      "The mitochondria is",
      "To be or not to be,",
  };
  // One prompt longer than a prefill chunk (64 rows): prefilled over several steps.
  std::string long_prompt = "Once there was a small village by the sea where";
  while (long_prompt.size() < 400) long_prompt += " the people fished and sang and";
  p.push_back(long_prompt);
  return p;
}

// Prompts that share a system prompt of several KV blocks (cached by the first), each then
// asking its question.
std::vector<std::string> questions_after_one_system_prompt(
    const std::vector<std::string>& questions) {
  std::string system = "You are a careful assistant. Answer briefly, and name the sources you used";
  while (system.size() < 360) system += ", checking every number twice";
  std::vector<std::string> texts;
  for (const std::string& question : questions)
    texts.push_back(system + ". Q: " + question + " A:");
  return texts;
}

struct Outcome {
  std::vector<int32_t> tokens;
  std::string text, stop_reason, error;
  uint64_t drafted = 0;
};

struct Probe {
  std::atomic<size_t> max_running{0};
};

std::shared_ptr<Job> make_job(const std::string& prompt, const StrategyChoice& spec,
                              const Config& c, std::promise<Outcome>& done, Scheduler& scheduler,
                              Probe& probe) {
  auto job = test::job_with_callbacks();
  job->request.prompt = test::encode_prompt(scheduler, prompt);
  job->request.sampling = c.sampling;
  job->request.seed = 1000 + prompt.size();  // its own seed (used when it samples)
  job->request.max_tokens = c.sampling.max_tokens;
  job->request.strategy = spec;
  test::callbacks(*job).on_start = [&done](const Refusal* e) {
    if (e) done.set_value(Outcome{{}, "", "", e->what(), 0});
  };
  test::callbacks(*job).on_text = [&scheduler, &probe](const std::string&) {
    size_t now = scheduler.running(), seen = probe.max_running.load();
    while (now > seen && !probe.max_running.compare_exchange_weak(seen, now)) {
    }
  };
  test::callbacks(*job).on_done = [&done](const GenerationResult* r, const Refusal* e) {
    if (r)
      done.set_value(Outcome{r->tokens, r->text, r->stop_reason, "", r->stats.drafted});
    else
      done.set_value(Outcome{{}, "", "", e->what(), 0});
  };
  return job;
}

// Runs the requests, all queued at once between two steps (so they share steps from the
// first), and returns their outcomes in order.
std::vector<Outcome> run_together(Scheduler& scheduler, const Config& c,
                                  const std::vector<std::string>& texts,
                                  const std::vector<StrategyChoice>& specs, Probe& probe) {
  std::vector<std::promise<Outcome>> done(texts.size());
  std::vector<std::shared_ptr<Job>> jobs;
  for (size_t i = 0; i < texts.size(); ++i)
    jobs.push_back(make_job(texts[i], specs[i], c, done[i], scheduler, probe));
  scheduler.run_exclusive([&] {
    for (auto& job : jobs) REQUIRE(scheduler.submit(job));
  });
  std::vector<Outcome> out;
  for (auto& d : done) out.push_back(d.get_future().get());
  return out;
}

Outcome run_alone(Scheduler& scheduler, const Config& c, const std::string& text,
                  const StrategyChoice& spec) {
  Probe probe;
  return run_together(scheduler, c, {text}, {spec}, probe).front();
}

// Runs `check(budget, config)` with max_prefill_rows 0 (no limit) and 1. Without the prefix
// cache: a prompt that an earlier run published would need no prefill.
template <class Check>
void for_each_prefill_budget(const Check& check) {
  for (const std::string budget : {"0", "1"}) {
    INFO("max_prefill_rows " << budget);
    check(budget, config({"server.max_prefill_rows=" + budget, "server.prefix_cache=false"}));
  }
}

// The shipped pair's engines under `c` and a scheduler over them, for one test alone.
struct OwnScheduler {
  const Config c;  // a copy: the engines keep a reference to it
  PluginRegistry registry{std::vector<std::string>{}};
  SharedEngine engines;
  Scheduler scheduler;

  explicit OwnScheduler(const Config& config)
      : c(config), engines(c, registry), scheduler(engines, c.server.queue_limit) {}
};

// A scheduler of its own under `config`, and two requests on it not yet submitted: a long one
// (2000 tokens, there to be cancelled) and a short one.
struct LongThenShort : OwnScheduler {
  Probe probe;
  std::promise<Outcome> first_done, second_done;
  std::shared_ptr<Job> first, second;

  explicit LongThenShort(const Config& config)
      : OwnScheduler(config),
        first(make_job("Once upon a time", setting("none"), c, first_done, scheduler, probe)),
        second(make_job("The quick brown fox", setting("none"), c, second_done, scheduler, probe)) {
    first->request.max_tokens = 2000;
    first->request.sampling.max_tokens = 2000;
  }
};

// `pass`: the step plan's pass-time curve to start from (k = "auto"), else the timed one.
void check_alone_equals_batched(const std::vector<std::string>& names,
                                const std::vector<std::string>& extra = {},
                                const PassTime* pass = nullptr) {
  const Config c = config(extra);
  PluginRegistry registry{std::vector<std::string>{}};
  SharedEngine engines(c, registry);
  Scheduler scheduler(engines, c.server.queue_limit);
  if (pass) scheduler.run_exclusive([&] { scheduler.set_pass_time(*pass); });
  const std::vector<std::string> texts = prompts();
  std::vector<StrategyChoice> specs;
  for (size_t i = 0; i < texts.size(); ++i) specs.push_back(setting(names[i % names.size()]));
  // Under the sanitizers (ten times slower) the first four requests, every setting among them,
  // are also run alone: the batch of 16 runs whole, and the plain build compares all 16.
  const size_t compared = SPECD_SANITIZED ? std::min<size_t>(4, texts.size()) : texts.size();
  std::vector<Outcome> alone;
  for (size_t i = 0; i < compared; ++i) {
    alone.push_back(run_alone(scheduler, c, texts[i], specs[i]));
    REQUIRE_MESSAGE(alone.back().error.empty(), alone.back().error);
    CHECK(alone.back().tokens.size() == 24u);
  }
  Probe probe;
  const std::vector<Outcome> together = run_together(scheduler, c, texts, specs, probe);
  CHECK(probe.max_running.load() == texts.size());  // all 16 shared the steps
  // Speculation ran. k = "auto" may rightly draft nothing among 16 (on the shipped pair a
  // drafted row does not pay for itself under load), so its runs alone count too.
  uint64_t drafted = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string& name = names[i % names.size()];
    if (name == "none") continue;
    drafted += together[i].drafted + (name == "auto" && i < compared ? alone[i].drafted : 0);
  }
  if (names != std::vector<std::string>{"none"}) CHECK(drafted > 0);
  for (size_t i = 0; i < texts.size(); ++i) {
    INFO("request " << i << " (" << names[i % names.size()] << "): " << texts[i].substr(0, 30));
    REQUIRE_MESSAGE(together[i].error.empty(), together[i].error);
    CHECK(together[i].stop_reason == "length");
    if (i >= compared) continue;
    CHECK(together[i].tokens == alone[i].tokens);
    CHECK(together[i].text == alone[i].text);
    // A fixed k's drafts are batch invariant too (batched draft passes): the same drafts,
    // hence the same rounds.
    const std::string& name = names[i % names.size()];
    if (name != "auto" && name != "none") CHECK(together[i].drafted == alone[i].drafted);
  }
}

// A llama target in llama.cpp's layout (the shared compat data), or "" after reporting the
// skip where it is missing.
std::string compat_llama_or_skip() {
  const std::string compat = std::string(SPECD_SOURCE_DIR) + "/../shared/compat/arch/llama.gguf";
  if (std::filesystem::exists(compat)) return compat;
  ::specd::test::skip_missing(compat, " is missing (the shared compat data)");
  return "";
}

// A drafter reading target features (`kind` "eagle" or "dflash", its file under the source
// tree) over the compat llama target, exact, beside requests that draft nothing.
void check_compat_drafter_alone_equals_batched(const std::string& kind,
                                               const std::string& drafter_in_source) {
  const std::string compat = compat_llama_or_skip();
  if (compat.empty()) return;
  const std::string drafter = std::string(SPECD_SOURCE_DIR) + "/" + drafter_in_source;
  check_alone_equals_batched(
      {"draft-model", "none"},
      {"target.model=\"" + compat + "\"", "proposer.kind=\"" + kind + "\"",
       "proposer.model=\"" + drafter + "\"", "acceptance.rule=\"exact-match\""});
}

}  // namespace

TEST_CASE("greedy output alone equals output among 15 others: speculation off") {
  if (!test::have_shipped_models()) return;
  check_alone_equals_batched({"none"});
}

TEST_CASE("greedy output alone equals output among 15 others: ngram") {
  if (!test::have_shipped_models()) return;
  check_alone_equals_batched({"ngram"});
}

TEST_CASE("greedy output alone equals output among 15 others: draft model") {
  if (!test::have_shipped_models()) return;
  check_alone_equals_batched({"draft-model"});
}

TEST_CASE("greedy output alone equals output among 15 others: EAGLE trees over target features") {
  if (!test::have_shipped_models() || !std::filesystem::exists(kModels + "/eagle.gguf")) return;
  // The configured proposer: a tree drafter reading the target's hidden rows (prefill
  // chunks and rounds), with an exact rule.
  check_alone_equals_batched(
      {"draft-model"}, {"proposer.kind=\"eagle\"", "proposer.model=\"" + kModels + "/eagle.gguf\"",
                        "acceptance.rule=\"exact-match\""});
}

TEST_CASE("greedy output alone equals output among 15 others: EAGLE-3 in llama.cpp's layout") {
  // A head reading three target layers' inputs (tests/compat/eagle3), with a draft
  // vocabulary of its own, beside requests that draft nothing and read no features.
  check_compat_drafter_alone_equals_batched("eagle", "tests/compat/eagle3/eagle3-d2t.gguf");
}

TEST_CASE("greedy output alone equals output among 15 others: DFlash in llama.cpp's layout") {
  // A block drafter reading two target layers' inputs (tests/compat/dflash): its injected
  // rows and its non-causal block must not depend on what shares the passes.
  check_compat_drafter_alone_equals_batched("dflash", "tests/compat/dflash/dflash.gguf");
}

TEST_CASE("a hybrid target (qwen35) with its MTP layer: alone equals among 15 others") {
  // Recurrent state per sequence beside the paged KV: each sequence's rejected drafts are
  // undone by a replay of its own rows, whatever shares the passes; MTP drafting from the
  // target file's own layer, ngram and plain requests in one batch.
  const std::string qwen35 = std::string(SPECD_SOURCE_DIR) + "/tests/compat/qwen35/qwen35-f16.gguf";
  const std::vector<std::string> mtp = {"target.model=\"" + qwen35 + "\"", "proposer.kind=\"mtp\"",
                                        "proposer.mode=\"greedy\"",
                                        "proposer.model=\"" + qwen35 + "\""};
  check_alone_equals_batched({"draft-model", "ngram", "none"}, mtp);
  // A constructed hybrid whose MTP layer agrees on 70% of its map: most rounds accept part of
  // their draft, so most commits replay rows.
  bench::ConstructedSpec spec = bench::constructed_preset("tiny");
  spec.architecture = "qwen35";
  spec.mtp_agreement = 0.7;
  const std::string built = ::specd::test::temp_dir("scheduler-hybrid") + "/qwen35.gguf";
  bench::write_constructed_model(built, spec);
  check_alone_equals_batched({"draft-model", "none"},
                             {"target.model=\"" + built + "\"", "proposer.kind=\"mtp\"",
                              "proposer.mode=\"greedy\"", "proposer.model=\"" + built + "\""});
  // And a dense draft model of the same vocabulary, sampled with a fixed seed.
  const std::string dense = compat_llama_or_skip();
  if (dense.empty()) return;
  check_alone_equals_batched({"draft-model"},
                             {"target.model=\"" + qwen35 + "\"", "proposer.model=\"" + dense + "\"",
                              "sampling.temperature=0.8"});
}

TEST_CASE("a draft of another vocabulary: alone equals among 15 others, greedy and seeded") {
  if (!test::have_shipped_models()) return;
  // The shipped draft with its ids shuffled, drafting by text and by intersection: its
  // context is re-tokenized text, and that too must not depend on the batch.
  const std::string shuffled = ::specd::test::temp_dir("scheduler-vocabulary") + "/draft.gguf";
  bench::write_shuffled_vocabulary(kModels + "/draft.gguf", shuffled, 3);
  for (const char* way : {"text", "intersection"}) {
    INFO(way);
    const std::vector<std::string> across = {"proposer.model=\"" + shuffled + "\"",
                                             std::string("proposer.vocabulary=\"") + way + "\""};
    check_alone_equals_batched({"draft-model", "none"}, across);
    std::vector<std::string> sampled = across;
    sampled.insert(sampled.end(), {"sampling.temperature=0.9", "sampling.top_p=0.95"});
    check_alone_equals_batched({"draft-model"}, sampled);
  }
}

TEST_CASE("greedy output alone equals output among 15 others: k = auto (k follows the load)") {
  if (!test::have_shipped_models()) return;
  // Whether drafting pays on the shipped pair depends on the machine and the build (under
  // the sanitizers on a 2-core Zen 3 VM the timed curve priced a drafted row above its
  // expected gain, and k = "auto" rightly drafted nothing), so the plan starts from a pass whose
  // reading of the weights dominates up to 32 rows (a GPU's shape): alone a sequence drafts long,
  // among 16 short. The steps then correct it toward this machine's curve.
  PassTime pass;
  const std::vector<uint32_t> rows = {1, 2, 4, 8, 16, 32, 64};
  pass.calibrate(
      rows, 1, [](uint32_t r) { return r <= 32 ? 0.010 + 1e-5 * r : 0.0103 + 0.5e-3 * (r - 32); });
  check_alone_equals_batched({"auto"}, {}, &pass);
}

TEST_CASE("k = auto: a request's first token waits for no draft; its later rounds draft") {
  if (!test::have_shipped_models()) return;
  const Config c = config();
  PluginRegistry registry{std::vector<std::string>{}};
  // Drafting pays: a pass costs about the same up to 32 rows. Decay 0: the steps set only
  // the curve's scale, never its shape, so a busy machine (whose passes vary by a quarter)
  // cannot make the plan see extra rows as dear and draft nothing.
  PassTime pass(0.0);
  const std::vector<uint32_t> rows = {1, 2, 4, 8, 16, 32, 64};
  pass.calibrate(
      rows, 1, [](uint32_t r) { return r <= 32 ? 0.010 + 1e-5 * r : 0.0103 + 0.5e-3 * (r - 32); });
  for (const std::string& prompt : {std::string("Once upon a time"), prompts().back()}) {
    INFO(prompt.substr(0, 30));
    // A scheduler of its own: the draft's cost is unmeasured, hence taken as free for its
    // first calls, so the second round drafts whatever this machine's timings (with the
    // shipped pair's costs measured, drafting may rightly not pay, under load most of all).
    SharedEngine engines(c, registry);
    Scheduler scheduler(engines, c.server.queue_limit);
    scheduler.run_exclusive([&] { scheduler.set_pass_time(pass); });
    std::promise<Outcome> done;
    Probe probe;
    auto job = make_job(prompt, setting("auto"), c, done, scheduler, probe);
    // Each token's step (steps() counts the steps done; a round's tokens share one).
    std::vector<uint64_t> step_of;
    job->request.logprobs = 0;
    test::callbacks(*job).on_logprob = [&](const TokenLogprob&) {
      step_of.push_back(scheduler.steps().steps);
    };
    scheduler.run_exclusive([&] { REQUIRE(scheduler.submit(job)); });
    const Outcome out = done.get_future().get();
    REQUIRE_MESSAGE(out.error.empty(), out.error);
    REQUIRE(step_of.size() == 24u);
    CHECK(step_of[0] != step_of[1]);  // the first round emitted one token: it drafted nothing
    CHECK(out.drafted > 0);
    size_t shared = 0;  // tokens emitted in the round of the token before: accepted drafts
    for (size_t i = 1; i < step_of.size(); ++i) shared += step_of[i] == step_of[i - 1];
    CHECK(shared > 0);
  }
}

TEST_CASE("max_prefill_rows: one chunk a step, the earliest request first; outputs unchanged") {
  if (!test::have_shipped_models()) return;
  for_each_prefill_budget([](const std::string& budget, const Config& c) {
    PluginRegistry registry{std::vector<std::string>{}};
    SharedEngine engines(c, registry);
    Scheduler scheduler(engines, c.server.queue_limit);
    const std::vector<std::string> texts = prompts();
    const std::vector<StrategyChoice> specs(texts.size(), setting("draft-model"));
    std::vector<Outcome> alone;
    for (size_t i = 0; i < texts.size(); ++i)
      alone.push_back(run_alone(scheduler, c, texts[i], specs[i]));
    // All 16 queued at once; each request's first text comes in the step after its last
    // chunk's (steps() counts the steps done; read between two steps: the alone runs' last
    // step may still be counting it when their answers are in).
    uint64_t start = 0;
    std::vector<std::promise<Outcome>> done(texts.size());
    std::vector<uint64_t> first_step(texts.size(), 0);
    std::vector<std::shared_ptr<Job>> jobs;
    Probe probe;
    for (size_t i = 0; i < texts.size(); ++i) {
      jobs.push_back(make_job(texts[i], specs[i], c, done[i], scheduler, probe));
      test::callbacks(*jobs.back()).on_text = [&, i](const std::string&) {
        if (!first_step[i]) first_step[i] = scheduler.steps().steps - start + 1;
      };
    }
    scheduler.run_exclusive([&] {
      start = scheduler.steps().steps;
      for (auto& job : jobs) REQUIRE(scheduler.submit(job));
    });
    for (size_t i = 0; i < texts.size(); ++i) {
      const Outcome got = done[i].get_future().get();
      REQUIRE_MESSAGE(got.error.empty(), got.error);
      CHECK(got.tokens == alone[i].tokens);
    }
    // The last prompt takes several chunks; every other fits in one.
    if (budget == "0") {
      for (size_t i = 0; i + 1 < texts.size(); ++i) CHECK(first_step[i] == 2);
    } else {
      for (size_t i = 0; i + 1 < texts.size(); ++i) CHECK(first_step[i] == i + 2);
      CHECK(first_step.back() > texts.size());
    }
  });
}

TEST_CASE("a seeded sampled request alone equals itself among 15 others (fixed k, exact rule)") {
  if (!test::have_shipped_models()) return;
  // Its draws come from its own generator and its logits are batch invariant, so at
  // temperature > 0 the same seed gives the same tokens whatever shares the batch.
  check_alone_equals_batched({"none", "draft-model"},
                             {"sampling.temperature=0.9", "sampling.top_p=0.95"});
}

TEST_CASE("requests with different speculative settings share one batch, outputs unchanged") {
  if (!test::have_shipped_models()) return;
  check_alone_equals_batched({"none", "ngram", "draft-model"});
}

TEST_CASE("requests beyond max_sequences or the KV budget wait, then run with the same output") {
  if (!test::have_shipped_models()) return;
  for (const std::string limit : {"server.max_sequences=2", "server.kv_budget=40"}) {
    INFO(limit);
    const Config c = config({limit});
    PluginRegistry registry{std::vector<std::string>{}};
    SharedEngine engines(c, registry);
    Scheduler scheduler(engines, c.server.queue_limit);
    const std::vector<std::string> all = prompts();
    const std::vector<std::string> texts(all.begin(), all.begin() + 5);
    const std::vector<StrategyChoice> specs(texts.size(), setting("draft-model"));
    std::vector<Outcome> alone;
    for (size_t i = 0; i < texts.size(); ++i)
      alone.push_back(run_alone(scheduler, c, texts[i], specs[i]));
    Probe probe;
    const std::vector<Outcome> together = run_together(scheduler, c, texts, specs, probe);
    // max_sequences = 2 runs two at a time; 40 KV rows hold one request of ~5 + 24 tokens.
    CHECK(probe.max_running.load() == (limit == "server.max_sequences=2" ? 2u : 1u));
    for (size_t i = 0; i < texts.size(); ++i) {
      REQUIRE_MESSAGE(together[i].error.empty(), together[i].error);
      CHECK(together[i].tokens == alone[i].tokens);
    }
  }
}

TEST_CASE("prefix cache: requests that take cached blocks give the tokens they give without") {
  if (!test::have_shipped_models()) return;
  const std::vector<std::string> texts =
      questions_after_one_system_prompt({"what is two plus two?", "name a long river.",
                                         "who wrote Hamlet?", "what is two plus two?"});
  for (const std::string temperature : {"0", "0.8"}) {
    for (const std::string name : {"none", "draft-model"}) {
      INFO("temperature " << temperature << ", " << name);
      const std::vector<StrategyChoice> specs(texts.size(), setting(name));
      const std::string t = "sampling.temperature=" + temperature;
      // Without the cache, each request alone.
      const Config off = config({t, "server.prefix_cache=false"});
      PluginRegistry registry{std::vector<std::string>{}};
      std::vector<Outcome> want;
      {
        SharedEngine engines(off, registry);
        Scheduler scheduler(engines, off.server.queue_limit);
        for (size_t i = 0; i < texts.size(); ++i)
          want.push_back(run_alone(scheduler, off, texts[i], specs[i]));
        CHECK(scheduler.steps().prefix_hit_rows == 0);
      }
      // With it: one after another (each after the first takes the system prompt's blocks,
      // the last the whole prompt's), then all together (sharing blocks among running
      // sequences too).
      const Config on = config({t});
      SharedEngine engines(on, registry);
      Scheduler scheduler(engines, on.server.queue_limit);
      for (size_t i = 0; i < texts.size(); ++i) {
        const Outcome got = run_alone(scheduler, on, texts[i], specs[i]);
        REQUIRE_MESSAGE(got.error.empty(), got.error);
        CHECK(got.tokens == want[i].tokens);
        CHECK(got.text == want[i].text);
      }
      const StepTotals first = scheduler.steps();
      CHECK(first.prefix_hit_rows >= 3 * 4 * LlamaModel::kKvBlockRows);
      CHECK(first.prefix_hit_rows < first.prompt_rows);
      Probe probe;
      const std::vector<Outcome> together = run_together(scheduler, on, texts, specs, probe);
      for (size_t i = 0; i < texts.size(); ++i) {
        REQUIRE_MESSAGE(together[i].error.empty(), together[i].error);
        CHECK(together[i].tokens == want[i].tokens);
      }
      CHECK(scheduler.steps().prefix_hit_rows > first.prefix_hit_rows);
    }
  }
}

TEST_CASE("prefix cache: a burst behind a prefill budget takes what the first one published") {
  if (!test::have_shipped_models()) return;
  const std::vector<std::string> texts = questions_after_one_system_prompt(
      {"what is two plus two?", "name a long river.", "who wrote Hamlet?"});
  const std::vector<StrategyChoice> specs(texts.size(), setting("draft-model"));
  PluginRegistry registry{std::vector<std::string>{}};
  std::vector<Outcome> want;
  {
    const Config off = config({"server.prefix_cache=false"});
    SharedEngine engines(off, registry);
    Scheduler scheduler(engines, off.server.queue_limit);
    for (size_t i = 0; i < texts.size(); ++i)
      want.push_back(run_alone(scheduler, off, texts[i], specs[i]));
  }
  for (const std::string budget : {"0", "1"}) {
    INFO("max_prefill_rows " << budget);
    const Config c = config({"server.max_prefill_rows=" + budget});
    SharedEngine engines(c, registry);
    Scheduler scheduler(engines, c.server.queue_limit);
    Probe probe;
    const std::vector<Outcome> got = run_together(scheduler, c, texts, specs, probe);
    for (size_t i = 0; i < texts.size(); ++i) {
      REQUIRE_MESSAGE(got[i].error.empty(), got[i].error);
      CHECK(got[i].tokens == want[i].tokens);
    }
    // Queued at once, none finds the system prompt published when it starts; behind the
    // budget the second and third take it once the first has prefilled it.
    const uint64_t hits = scheduler.steps().prefix_hit_rows;
    if (budget == "0")
      CHECK(hits == 0);
    else
      CHECK(hits >= 2 * 4 * LlamaModel::kKvBlockRows);
  }
}

TEST_CASE("prefix cache: a full pool evicts cached blocks, oldest first, and outputs hold") {
  if (!test::have_shipped_models()) return;
  // 256 KV rows: sixteen blocks, so the second prompt's prefill needs blocks the first one left
  // cached, and those are evicted rather than the pool grown.
  const Config c = config({"server.kv_budget=256"});
  OwnScheduler own(c);
  Scheduler& scheduler = own.scheduler;
  const std::vector<std::string> all = prompts();
  const std::string& long_prompt = all.back();
  const StrategyChoice spec = setting("draft-model");
  const Outcome first = run_alone(scheduler, c, long_prompt, spec);
  REQUIRE_MESSAGE(first.error.empty(), first.error);
  std::string other = "Far away in the hills there lived a miller who";
  while (other.size() < 400) other += " ground the corn and told tales and";
  const Outcome second = run_alone(scheduler, c, other, spec);
  REQUIRE_MESSAGE(second.error.empty(), second.error);
  CHECK(scheduler.steps().kv_evictions > 0);
  CHECK(scheduler.steps().kv_blocks == 16);
  const Outcome again = run_alone(scheduler, c, long_prompt, spec);
  CHECK(again.tokens == first.tokens);
}

TEST_CASE("a cancelled request ends at its next step and frees its place; run_exclusive") {
  if (!test::have_shipped_models()) return;
  LongThenShort r(config({"server.max_sequences=1"}));
  Scheduler& scheduler = r.scheduler;
  // Cancel from inside the stream, after a few pieces.
  auto pieces = std::make_shared<int>(0);
  test::callbacks(*r.first).on_text = [first_raw = r.first.get(), pieces](const std::string&) {
    if (++*pieces == 3) first_raw->cancelled = true;
  };
  r.second->request.max_tokens = 100;
  REQUIRE(scheduler.submit(r.first));
  REQUIRE(scheduler.submit(r.second));
  const Outcome a = r.first_done.get_future().get();
  CHECK(a.stop_reason == "cancelled");
  CHECK(a.tokens.size() < 50u);
  const Outcome b = r.second_done.get_future().get();
  CHECK(b.error.empty());
  CHECK(b.tokens.size() == 100u);  // ignore_eos: the whole max_tokens
  // run_exclusive: runs on the worker with the target to itself, and passes on what it throws.
  int vocab = 0;
  scheduler.run_exclusive([&] { vocab = r.engines.target().info().vocab_size; });
  CHECK(vocab > 0);
  CHECK_THROWS_WITH(scheduler.run_exclusive([] { throw std::runtime_error("from fn"); }),
                    "from fn");
  scheduler.drain();
  bool ran = false;
  scheduler.run_exclusive([&] { ran = true; });  // after drain: at once
  CHECK(ran);
}

TEST_CASE(
    "a request cancelled while it waits for KV ends without holding any: the pool keeps its size") {
  if (!test::have_shipped_models()) return;
  // The first takes the whole budget (a reservation is at most the budget); the second waits.
  LongThenShort r(config({"server.kv_budget=64"}));
  SharedEngine& engines = r.engines;
  const std::shared_ptr<Job>&first = r.first, &second = r.second;
  int64_t blocks_while_running = -1;
  bool second_started = false;  // every job that is not refused starts before it is done
  test::callbacks(*second).on_start =
      [&, refused = test::callbacks(*second).on_start](const Refusal* refusal) {
        second_started = refusal == nullptr;
        refused(refusal);
      };
  auto pieces = std::make_shared<int>(0);
  test::callbacks(*first).on_text = [&, first_raw = first.get(), pieces](const std::string&) {
    if (++*pieces == 2) {
      blocks_while_running = engines.target().kv_pool().blocks();
      second->cancelled = true;  // gone while queued behind the full budget
    }
    if (*pieces == 8) first_raw->cancelled = true;
  };
  REQUIRE(r.scheduler.submit(first));
  REQUIRE(r.scheduler.submit(second));
  CHECK(r.first_done.get_future().get().stop_reason == "cancelled");
  CHECK(r.second_done.get_future().get().stop_reason == "cancelled");
  CHECK(second_started);
  CHECK(blocks_while_running == 4);  // 64 rows of 16
  CHECK(engines.target().kv_pool().blocks() == blocks_while_running);
}

TEST_CASE("a request cancelled while its prompt prefills ends at once, prefilling no more") {
  if (!test::have_shipped_models()) return;
  for_each_prefill_budget([](const std::string&, const Config& c) {
    PluginRegistry registry{std::vector<std::string>{}};
    SharedEngine engines(c, registry);
    Scheduler scheduler(engines, c.server.queue_limit);
    Probe probe;
    std::promise<Outcome> long_done, short_done;
    // A prompt of several chunks, and (with the budget: waiting behind it) a short one;
    // both are cancelled as they are admitted, before any pass.
    auto long_job =
        make_job(prompts().back(), setting("draft-model"), c, long_done, scheduler, probe);
    auto short_job =
        make_job("The quick brown fox", setting("draft-model"), c, short_done, scheduler, probe);
    for (Job* job : {long_job.get(), short_job.get()})
      test::callbacks(*job).on_start = [job](const Refusal* e) {
        REQUIRE(e == nullptr);
        job->cancelled = true;
      };
    scheduler.run_exclusive([&] {
      REQUIRE(scheduler.submit(long_job));
      REQUIRE(scheduler.submit(short_job));
    });
    for (auto* done : {&long_done, &short_done}) {
      const Outcome o = done->get_future().get();
      CHECK(o.error.empty());
      CHECK(o.stop_reason == "cancelled");
      CHECK(o.tokens.empty());
    }
    CHECK(scheduler.steps().prefill_rows == 0);
  });
}

// Not run by default (a measurement, no assertion on time):
//   build/bin/scheduler_test -tc="*throughput*" --no-skip
TEST_CASE("throughput of 1, 8 and 16 concurrent greedy sequences" * doctest::skip()) {
  if (!test::have_shipped_models()) return;
  const Config c = config({"sampling.max_tokens=128"});
  OwnScheduler own(c);
  Scheduler& scheduler = own.scheduler;
  const std::vector<std::string> all = prompts();
  std::printf("| speculation | 1 seq tok/s | 8 seq tok/s | 16 seq tok/s |\n|---|---|---|---|\n");
  for (const std::string name : {"none", "ngram", "draft-model", "auto"}) {
    const StrategyChoice spec = setting(name);
    std::printf("| %s |", name.c_str());
    for (size_t level : {1u, 8u, 16u}) {
      const std::vector<std::string> texts(all.begin(), all.begin() + level);
      const std::vector<StrategyChoice> specs(level, spec);
      Probe probe;
      run_together(scheduler, c, texts, specs, probe);  // warm: proposer instances made
      const auto t0 = std::chrono::steady_clock::now();
      const std::vector<Outcome> out = run_together(scheduler, c, texts, specs, probe);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      size_t tokens = 0, drafted = 0;
      for (const Outcome& o : out) {
        tokens += o.tokens.size();
        drafted += o.drafted;
      }
      std::printf(" %.0f (%.2f drafted/token) |", double(tokens) / s,
                  double(drafted) / double(tokens));
      std::fflush(stdout);
    }
    std::printf("\n");
  }
}
