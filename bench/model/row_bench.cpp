// specd-row-bench: what one verified row costs the host at a given vocabulary, the work a
// round does per row after the target pass (Sequence::end_round): padding mask, the sampling
// transform of the row's logits, the target rows' validation, the acceptance rule on dense p
// and q rows. With a model it also times the target pass those rows share, so the host's
// share of a round shows.
//
//   specd-row-bench [--vocab N] [--k K] [--repeats R] [--rule ID] [--model TARGET.gguf]
//                   [--threads N]
//
// Prints microseconds per row (median of R rounds of k + 1 rows) for each sampling setting,
// and the round's host time against the pass.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "acceptance/acceptance_rule.hpp"
#include "acceptance/tree_validation.hpp"
#include "backend/backend.hpp"
#include "common/error.hpp"
#include "engine/padding_mask.hpp"
#include "median.hpp"
#include "models/llama_model.hpp"
#include "plugin/host_services.hpp"
#include "plugin/registry.hpp"
#include "sampling/sample_row.hpp"
#include "sampling/sampling_transform.hpp"

using namespace specd;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Setting {
  const char* name;
  SamplingParams params;
};

// One round's host work on rows of `logits` ([rows, vocab]), q rows drawn from the same
// logits a little perturbed (a draft that mostly agrees): seconds.
double round_seconds(const std::vector<float>& logits, uint32_t rows, uint32_t vocab,
                     const SamplingParams& params, const AcceptanceRule& rule, Rng& rng) {
  std::vector<float> work(logits);
  std::vector<double> p(static_cast<size_t>(rows) * vocab), q(p.size());
  std::vector<specd_token> tokens(rows - 1);
  std::vector<int32_t> parents(rows - 1);
  // The draft's q rows and tokens come before the round (the proposer's work, not timed).
  for (uint32_t r = 0; r + 1 < rows; ++r) {
    std::vector<float> d(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
    for (uint32_t i = 0; i < vocab; i += 7) d[i] += 0.5f;
    transform_logits(d, params, std::span<double>(q.data() + r * vocab, vocab));
    tokens[r] =
        static_cast<specd_token>(sample(std::span<const double>(q.data() + r * vocab, vocab), rng));
    parents[r] = static_cast<int32_t>(r);
  }
  const auto t0 = Clock::now();
  for (uint32_t r = 0; r < rows; ++r) {
    const std::span<float> row(work.data() + r * vocab, vocab);
    mask_padding(row, vocab);
    transform_logits(row, params, std::span<double>(p.data() + r * vocab, vocab));
  }
  const specd_draft_tree tree{
      sizeof(specd_draft_tree), rows - 1, vocab, SPECD_SIBLINGS_IID, tokens.data(),
      parents.data(),           q.data()};
  const specd_target_dists dists{sizeof(specd_target_dists), rows, vocab, p.data()};
  validate_target(dists, tree, "bench");
  rule.accept(tree, dists, rng);
  return since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t vocab = 151936, k = 4, repeats = 9, threads = 2;
  std::string rule_id = "rejection", model;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "specd-row-bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--vocab")
      vocab = static_cast<uint32_t>(std::stoul(value()));
    else if (a == "--k")
      k = static_cast<uint32_t>(std::stoul(value()));
    else if (a == "--repeats")
      repeats = static_cast<uint32_t>(std::stoul(value()));
    else if (a == "--rule")
      rule_id = value();
    else if (a == "--model")
      model = value();
    else if (a == "--threads")
      threads = static_cast<uint32_t>(std::stoul(value()));
    else {
      std::fprintf(stderr,
                   "usage: specd-row-bench [--vocab N] [--k K] [--repeats R] [--rule ID] "
                   "[--model TARGET.gguf] [--threads N]\n");
      return 2;
    }
  }
  if (vocab < 2 || k < 1 || k > 63 || repeats < 1) {
    std::fprintf(stderr, "specd-row-bench: need vocab >= 2, 1 <= k <= 63, repeats >= 1\n");
    return 2;
  }
  try {
    PluginRegistry registry{std::vector<std::string>{}};
    const AcceptanceRule rule(registry.require(rule_id, SPECD_KIND_ACCEPTANCE), nullptr);
    const uint32_t rows = k + 1;
    // Logits shaped like a model's: one clear winner per row over Gaussian noise.
    std::mt19937 gen(1);
    std::normal_distribution<float> noise(0.0f, 2.0f);
    std::vector<float> logits(static_cast<size_t>(rows) * vocab);
    for (float& x : logits) x = noise(gen);
    for (uint32_t r = 0; r < rows; ++r) logits[r * vocab + (r * 7919) % vocab] = 18.0f;
    const Setting settings[] = {{"T=0 (greedy)", {0.0, 0, 1.0, 0.0}},
                                {"T=0.8", {0.8, 0, 1.0, 0.0}},
                                {"T=0.8 top_p=0.95", {0.8, 0, 0.95, 0.0}},
                                {"T=0.8 top_k=40", {0.8, 40, 1.0, 0.0}},
                                {"T=0.8 min_p=0.05", {0.8, 0, 1.0, 0.05}}};
    double pass_s = 0;
    if (!model.empty()) {
      Backend backend(registry.require("cpu", SPECD_KIND_BACKEND));
      DeviceOptions options;
      options.threads = threads;
      auto device = backend.open(options);
      auto target = LlamaModel::load(model, *device);
      const int32_t prefix = 64;
      auto cache = target->new_cache(prefix + static_cast<int32_t>(rows));
      std::vector<int32_t> t(prefix, 1), pos(prefix), par(prefix), all(prefix);
      for (int32_t i = 0; i < prefix; ++i) pos[i] = i, par[i] = i - 1, all[i] = i;
      target->forward(*cache, t, pos, par, nullptr, nullptr, prefix);
      target->commit(*cache, all);
      std::vector<int32_t> rt(rows, 1), rp(rows), rq(rows);
      for (uint32_t i = 0; i < rows; ++i)
        rp[i] = prefix + static_cast<int32_t>(i), rq[i] = int32_t(i) - 1;
      std::vector<float> out(static_cast<size_t>(rows) * target->info().vocab_size);
      std::vector<double> times;
      for (uint32_t r = 0; r <= repeats; ++r) {
        const auto t0 = Clock::now();
        target->forward(*cache, rt, rp, rq, out.data());
        if (r > 0) times.push_back(since(t0));  // the first is a warm-up
      }
      pass_s = bench::median(times);
      std::printf("target    %s: a pass over %u rows takes %.2f ms (median of %u)\n", model.c_str(),
                  rows, pass_s * 1e3, repeats);
    }
    std::printf(
        "host      per verified row at vocabulary %u, rule %s, rounds of %u rows "
        "(median of %u):\n",
        vocab, rule.id().c_str(), rows, repeats);
    std::printf("%-20s %12s %12s%s\n", "sampling", "us per row", "ms per round",
                pass_s > 0 ? "   share of the pass" : "");
    for (const Setting& s : settings) {
      Rng rng(7);
      std::vector<double> times;
      for (uint32_t r = 0; r <= repeats; ++r) {
        const double t = round_seconds(logits, rows, vocab, s.params, rule, rng);
        if (r > 0) times.push_back(t);
      }
      const double round = bench::median(times);
      std::printf("%-20s %12.1f %12.3f", s.name, round / rows * 1e6, round * 1e3);
      if (pass_s > 0) std::printf("   %5.1f%%", 100.0 * round / pass_s);
      std::printf("\n");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specd-row-bench: %s\n", e.what());
    return 1;
  }
}
