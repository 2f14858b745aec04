// Head models over the backend ops: logits against train/reference_forward.py (PyTorch) on
// random heads and, when present, the shipped ones; the head cache's pending tree (rows
// added over several calls) against running each path alone.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../backend/backend_test_util.hpp"
#include "../models/model_runs.hpp"
#include "backend/backend.hpp"
#include "common/error.hpp"
#include "head_fixtures.hpp"
#include "models/heads/head_model.hpp"
#include "models/heads/sha256.hpp"
#include "models/llama_model.hpp"
#include "plugin/registry.hpp"
#include "random_heads.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"
#include "token_rows.hpp"

using namespace specd;
using namespace specd::test;

namespace {

Device& cpu_device() {
  static OpenBackend cpu = open_cpu(1);
  return *cpu.device;
}

// Every number inside the JSON array that follows "key": in `json`.
std::vector<double> json_numbers(const std::string& json, const std::string& key) {
  std::vector<double> out;
  size_t i = json.find("\"" + key + "\"");
  if (i == std::string::npos) return out;
  i = json.find('[', i);
  int depth = 0;
  while (i < json.size()) {
    const char c = json[i];
    if (c == '[') {
      ++depth;
      ++i;
    } else if (c == ']') {
      if (--depth == 0) break;
      ++i;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      char* end = nullptr;
      out.push_back(std::strtod(json.c_str() + i, &end));
      i = static_cast<size_t>(end - json.c_str());
    } else {
      ++i;
    }
  }
  return out;
}

bool have_torch() {
  return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

std::string run_reference(const std::string& head, const std::string& target,
                          const std::vector<int32_t>& tokens) {
  return test::run_reference_forward(head + " --target " + target, tokens);
}

// The head's logits (Medusa: [T, K, V]; EAGLE/MTP: [T-1, V]) and, for EAGLE/MTP, output
// features [T-1, d], from the target's true features.
struct HeadRun {
  std::vector<float> logits, features;
  int32_t heads = 1, vocab = 0, dim = 0;
};

HeadRun run_head(const std::string& head_path, const std::string& target_path,
                 const std::vector<int32_t>& tokens) {
  Device& dev = cpu_device();
  auto target = LlamaModel::load(target_path, dev);
  const int32_t T = static_cast<int32_t>(tokens.size());
  const int32_t d = target->info().n_embd, V = target->info().vocab_size;
  auto tcache = target->new_cache(T);
  std::vector<float> tlogits(static_cast<size_t>(T) * V), hidden(static_cast<size_t>(T) * d);
  target->forward(*tcache, tokens, iota_n(T), chain_parents(T), tlogits.data(), hidden.data());
  auto head = HeadModel::load(head_path, target_path, dev);
  HeadRun r;
  r.vocab = V;
  r.dim = d;
  if (!head->has_cache()) {
    r.heads = head->info().n_heads;
    r.logits.resize(static_cast<size_t>(T) * r.heads * V);
    std::vector<int32_t> unused(T, 0);
    head->forward(nullptr, hidden.data(), unused, unused, unused, r.logits.data(), nullptr);
    return r;
  }
  auto cache = head->new_cache(T);
  std::vector<int32_t> next(tokens.begin() + 1, tokens.end());
  r.logits.resize(static_cast<size_t>(T - 1) * V);
  r.features.resize(static_cast<size_t>(T - 1) * d);
  head->forward(cache.get(), hidden.data(), next, iota_n(T - 1), chain_parents(T - 1),
                r.logits.data(), r.features.data());
  return r;
}

double max_diff(const std::vector<float>& a, const std::vector<double>& b, double* scale) {
  double worst = 0;
  *scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::fabs(a[i] - b[i]));
    *scale = std::max(*scale, std::fabs(b[i]));
  }
  return worst;
}

void compare_with_reference(const std::string& head, const std::string& target,
                            const std::vector<int32_t>& tokens) {
  HeadRun r = run_head(head, target, tokens);
  const std::string out = run_reference(head, target, tokens);
  std::vector<double> ref = json_numbers(out, "logits");
  const size_t T = tokens.size();
  if (r.features.empty()) {  // Medusa: reference [K][T][V], ours [T][K][V]
    REQUIRE(ref.size() == r.logits.size());
    std::vector<double> reordered(ref.size());
    for (size_t k = 0; k < static_cast<size_t>(r.heads); ++k)
      for (size_t t = 0; t < T; ++t)
        for (size_t v = 0; v < static_cast<size_t>(r.vocab); ++v)
          reordered[(t * r.heads + k) * r.vocab + v] = ref[(k * T + t) * r.vocab + v];
    ref = reordered;
  } else {
    REQUIRE(ref.size() == r.logits.size());
    std::vector<double> feats =
        json_numbers(out, out.find("\"features\"") != std::string::npos ? "features" : "hidden");
    REQUIRE(feats.size() == r.features.size());
    double scale = 0;
    const double worst = max_diff(r.features, feats, &scale);
    MESSAGE(head << ": max |feature - PyTorch| = " << worst << " (max |feature| " << scale << ")");
    CHECK(worst <= 2e-4 * std::max(1.0, scale));
  }
  double scale = 0;
  const double worst = max_diff(r.logits, ref, &scale);
  MESSAGE(head << ": max |logit - PyTorch| = " << worst << " (max |logit| " << scale << ")");
  CHECK(worst <= 2e-4 * std::max(1.0, scale));
}

struct Files {
  std::string dir = test::temp_dir("heads-model");
  std::string target = dir + "/target.gguf";
  Files() { test::write_random_target(target, 21); }
};

}  // namespace

TEST_CASE("head logits match the PyTorch reference (train/reference_forward.py)" * SPECD_MAY_SKIP) {
  const std::string script = std::string(SPECD_SOURCE_DIR) + "/train/reference_forward.py";
  if (!std::filesystem::exists(script) || !have_torch()) {
    ::specd::test::skip_missing(script, " is missing or /usr/bin/python3 cannot import torch");
    return;
  }
  Files f;
  const std::vector<int32_t> tokens = {0, 40, 77, 12, 200, 150, 33, 91};
  test::write_random_heads(f.dir, f.target, 3);
  for (std::string name : {"medusa", "eagle", "mtp"}) {
    CAPTURE(name);
    compare_with_reference(f.dir + "/" + name + ".gguf", f.target, tokens);
  }
  // The shipped heads on the shipped target, when they are there.
  const std::string models = std::string(SPECD_SOURCE_DIR) + "/models";
  for (const char* name : {"medusa", "eagle", "mtp"}) {
    const std::string head = models + "/" + name + ".gguf";
    if (!std::filesystem::exists(head) || !std::filesystem::exists(models + "/target.gguf")) {
      ::specd::test::skip_missing("the shipped ", name, ": ", head, " is not there");
      continue;
    }
    CAPTURE(head);
    compare_with_reference(head, models + "/target.gguf", {0, 1000, 42, 7, 300, 2048});
  }
}

TEST_CASE("a pending tree grown over several calls equals each path run alone") {
  Files f;
  test::RandomHeadSpec spec;
  spec.seed = 9;
  for (std::string name : {"eagle", "mtp"}) {
    CAPTURE(name);
    const std::string path = f.dir + "/" + name + "-tree.gguf";
    if (name == "eagle")
      test::write_random_eagle(path, f.target, spec);
    else
      test::write_random_mtp(path, f.target, spec);
    auto head = HeadModel::load(path, f.target, cpu_device());
    const int32_t d = head->info().n_embd, V = head->info().vocab_size;
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> feats(static_cast<size_t>(8) * d);
    for (float& x : feats) x = nd(rng);
    // Committed prefix: 3 elements. Then a tree: rows a (parent -1), b (-1) in one call,
    // then c (child of a), e (child of b) in a second call, then g (child of c).
    const std::vector<int32_t> prefix_tokens = {5, 6, 7};
    std::vector<float> logits(static_cast<size_t>(3) * V);
    auto cache = head->new_cache(16);
    head->forward(cache.get(), feats.data(), prefix_tokens, iota_n(3), chain_parents(3),
                  logits.data(), nullptr);
    head->commit(*cache, iota_n(3));
    std::vector<float> l1(2 * V), l2(2 * V), l3(V);
    head->forward(cache.get(), feats.data() + 3 * d, std::vector<int32_t>{10, 11},
                  std::vector<int32_t>{3, 3}, std::vector<int32_t>{-1, -1}, l1.data(), nullptr);
    head->forward(cache.get(), feats.data() + 5 * d, std::vector<int32_t>{12, 13},
                  std::vector<int32_t>{4, 4}, std::vector<int32_t>{0, 1}, l2.data(), nullptr);
    head->forward(cache.get(), feats.data() + 7 * d, std::vector<int32_t>{14},
                  std::vector<int32_t>{5}, std::vector<int32_t>{2}, l3.data(), nullptr);
    // Path a, c, g alone as a chain after the prefix (rows 3, 5, 7 of feats).
    auto alone = head->new_cache(16);
    head->forward(alone.get(), feats.data(), prefix_tokens, iota_n(3), chain_parents(3),
                  logits.data(), nullptr);
    head->commit(*alone, iota_n(3));
    std::vector<float> path_feats;
    for (int32_t row : {3, 5, 7})
      path_feats.insert(path_feats.end(), feats.begin() + row * d, feats.begin() + (row + 1) * d);
    std::vector<float> lp(static_cast<size_t>(3) * V);
    head->forward(alone.get(), path_feats.data(), std::vector<int32_t>{10, 12, 14}, iota_n(3, 3),
                  chain_parents(3), lp.data(), nullptr);
    double worst = 0;
    for (int32_t v = 0; v < V; ++v) {
      worst = std::max<double>(worst, std::fabs(l1[v] - lp[v]));
      worst = std::max<double>(worst, std::fabs(l2[v] - lp[V + v]));
      worst = std::max<double>(worst, std::fabs(l3[v] - lp[2 * V + v]));
    }
    CHECK(worst <= 1e-4);
    // Keeping that path makes the cache equal to the chain's.
    head->commit(*cache, std::vector<int32_t>{0, 2, 4});
    CHECK(cache->size() == 6);
    std::vector<float> next_a(V), next_b(V);
    head->forward(cache.get(), feats.data(), std::vector<int32_t>{20}, std::vector<int32_t>{6},
                  std::vector<int32_t>{-1}, next_a.data(), nullptr);
    head->commit(*alone, iota_n(3));
    head->forward(alone.get(), feats.data(), std::vector<int32_t>{20}, std::vector<int32_t>{6},
                  std::vector<int32_t>{-1}, next_b.data(), nullptr);
    worst = 0;
    for (int32_t v = 0; v < V; ++v)
      worst = std::max<double>(worst, std::fabs(next_a[v] - next_b[v]));
    CHECK(worst <= 1e-4);
  }
}

TEST_CASE("a head bound to another target is refused, naming both") {
  Files f;
  const std::string other = f.dir + "/other.gguf";
  test::write_random_target(other, 77);
  for (std::string name : {"medusa", "eagle", "mtp"}) {
    CAPTURE(name);
    const std::string path = f.dir + "/" + name + "-other.gguf";
    test::RandomHeadSpec hs;
    if (name == "medusa")
      test::write_random_medusa(path, other, hs);
    else if (name == "eagle")
      test::write_random_eagle(path, other, hs);
    else
      test::write_random_mtp(path, other, hs);
    try {
      HeadModel::load(path, f.target, cpu_device());
      FAIL("a head bound to another target was accepted");
    } catch (const UsageError& e) {
      const std::string what = e.what();
      CHECK(what.find("random-llama-77") != std::string::npos);
      CHECK(what.find("random-llama-21") != std::string::npos);
      CHECK(what.find(path) != std::string::npos);
      CHECK(what.find(f.target) != std::string::npos);
    }
  }
}

TEST_CASE("sha256 of the FIPS 180-2 examples (the target digest's hash)") {
  CHECK(sha256_hex("", 0) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc", 3) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  CHECK(sha256_hex(two_blocks.data(), two_blocks.size()) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  CHECK(sha256_hex(million.data(), million.size()) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
