// The llama model over the CPU backend: golden test against a naive double-precision
// forward, batch invariance of verification (chains and trees), KV commit/compaction,
// truncation, bad files, and (when available) the PyTorch reference on models/target.gguf.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "../backend/backend_test_util.hpp"
#include "model_fixture.hpp"
#include "model_runs.hpp"
#include "models/llama_model.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"
#include "token_rows.hpp"

using namespace specd;
using namespace specd::test;

namespace {

Device& cpu_device() {
  static std::unique_ptr<Backend> backend;
  static std::unique_ptr<Device> device;
  if (!device) {
    backend = std::make_unique<Backend>(registry().require("cpu", SPECD_KIND_BACKEND));
    DeviceOptions opt;
    opt.threads = 2;
    // The references below compute over the exactly dequantized weights in f32/double: the
    // CPU backend's exact family (its int8 family has its own tests in tests/backend).
    const ExactQuant exact;
    device = backend->open(opt);
  }
  return *device;
}

// Runs a chain of tokens from position cache.size() and commits them all.
std::vector<float> run_chain(LlamaModel& model, KvCache& cache, const std::vector<int32_t>& t) {
  const int32_t n = static_cast<int32_t>(t.size());
  std::vector<float> logits(static_cast<size_t>(n) * model.info().vocab_size);
  model.forward(cache, t, iota_n(n, cache.size()), chain_parents(n), logits.data());
  model.commit(cache, iota_n(n));
  return logits;
}

// Verifying `m` random tokens (drawn from `rng`) as one chain after `prompt` gives, row for
// row, the bits of m single steps; each way in a cache of `cache_rows`.
void check_chain_matches_steps(LlamaModel& model, std::mt19937& rng,
                               const std::vector<int32_t>& prompt, int32_t m, int32_t cache_rows) {
  const int32_t V = model.info().vocab_size, start = static_cast<int32_t>(prompt.size());
  const auto draft = random_tokens(rng, m, V);
  auto batch_cache = model.new_cache(cache_rows);
  run_chain(model, *batch_cache, prompt);
  std::vector<float> batch(static_cast<size_t>(m) * V);
  model.forward(*batch_cache, draft, iota_n(m, start), chain_parents(m), batch.data());
  auto step_cache = model.new_cache(cache_rows);
  run_chain(model, *step_cache, prompt);
  for (int32_t i = 0; i < m; ++i) {
    const auto one = run_chain(model, *step_cache, {draft[i]});
    INFO("m=" << m << " row " << i);
    CHECK(std::memcmp(one.data(), batch.data() + static_cast<size_t>(i) * V, V * 4) == 0);
  }
}

void compare_to_naive(const std::string& path, const std::vector<int32_t>& tokens, double tol) {
  auto model = LlamaModel::load(path, cpu_device());
  auto cache = model->new_cache(static_cast<int32_t>(tokens.size()) + 4);
  const int32_t V = model->info().vocab_size, d = model->info().n_embd;
  const int32_t T = static_cast<int32_t>(tokens.size());
  std::vector<float> logits(static_cast<size_t>(T) * V), hidden(static_cast<size_t>(T) * d);
  model->forward(*cache, tokens, iota_n(T), chain_parents(T), logits.data(), hidden.data());
  std::vector<std::vector<double>> ref_hidden;
  const auto ref = naive_forward(path, tokens, &ref_hidden);
  double worst = 0, worst_h = 0, scale = 0;
  for (int32_t t = 0; t < T; ++t) {
    for (int32_t v = 0; v < V; ++v) {
      worst = std::max(worst, std::fabs(logits[t * V + v] - ref[t][v]));
      scale = std::max(scale, std::fabs(ref[t][v]));
    }
    for (int32_t i = 0; i < d; ++i)
      worst_h = std::max(worst_h, std::fabs(hidden[t * d + i] - ref_hidden[t][i]));
  }
  MESSAGE(path << ": max |logit - naive| = " << worst << " (max |logit| " << scale << "), hidden "
               << worst_h);
  CHECK(worst <= tol * std::max(1.0, scale));
  CHECK(worst_h <= tol * 10);
}

}  // namespace

TEST_CASE("model forward matches the naive reference for f32, f16, bf16 and q8_0 weights") {
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0}) {
    FixtureSpec s;
    s.matrix_type = type;
    s.seed = 7;
    const std::string path =
        write_fixture(s, std::string("golden-") + ggml_type_name(type) + ".gguf");
    std::mt19937 rng(3);
    compare_to_naive(path, random_tokens(rng, 12, static_cast<int32_t>(s.vocab)), 1e-4);
  }
}

TEST_CASE("model forward over every llama.cpp quantization preset matches the naive reference" *
          SPECD_MAY_SKIP) {
  // ../shared/compat/quant: one model quantized by llama-quantize into each preset; the
  // reference runs in double precision over the exactly dequantized weights.
  const std::string dir = std::string(SPECD_SOURCE_DIR) + "/../shared/compat/quant";
  if (!std::filesystem::is_directory(dir)) {
    ::specd::test::skip_missing("llama.cpp reference data not found at ", dir);
    return;
  }
  for (const char* preset : {"Q2_K", "Q3_K_M", "Q4_0", "Q4_1", "Q4_K_M", "Q5_0", "Q5_1", "Q5_K_M",
                             "Q6_K", "Q8_0", "IQ4_NL", "IQ4_XS"}) {
    CAPTURE(preset);
    std::mt19937 rng(8);
    compare_to_naive(dir + "/" + preset + ".gguf", random_tokens(rng, 6, 4096), 1e-4);
  }
}

TEST_CASE("model forward with tied output and a prefill beyond 64 rows (library GEMM path)") {
  FixtureSpec s;
  s.tied = true;
  s.n_head_kv = 4;
  const std::string path = write_fixture(s, "tied.gguf");
  std::mt19937 rng(4);
  compare_to_naive(path, random_tokens(rng, 90, static_cast<int32_t>(s.vocab)), 1e-4);
}

TEST_CASE("a forward computes logits only for the rows asked for") {
  FixtureSpec s;
  const std::string path = write_fixture(s, "logit-rows.gguf");
  auto model = LlamaModel::load(path, cpu_device());
  const int32_t V = model->info().vocab_size;
  std::mt19937 rng(6);
  for (int32_t m : {5, 90}) {  // the small-m kernels and the library GEMM path
    INFO("m=" << m);
    const auto tokens = random_tokens(rng, m, V);
    auto full_cache = model->new_cache(128);
    std::vector<float> full(static_cast<size_t>(m) * V);
    model->forward(*full_cache, tokens, iota_n(m), chain_parents(m), full.data());

    // Only the last row: the buffer holds one row, then a guard row that must stay intact.
    auto last_cache = model->new_cache(128);
    std::vector<float> last(2 * static_cast<size_t>(V), -7.0f);
    model->forward(*last_cache, tokens, iota_n(m), chain_parents(m), last.data(), nullptr, m - 1);
    for (int32_t v = 0; v < V; ++v) {
      CHECK(last[v] == doctest::Approx(full[static_cast<size_t>(m - 1) * V + v]).epsilon(1e-4));
      CHECK(last[V + v] == -7.0f);
    }

    // No logits at all (a prefill): the KV rows are the same, so the next token's logits are.
    auto none_cache = model->new_cache(128);
    model->forward(*none_cache, tokens, iota_n(m), chain_parents(m), nullptr, nullptr, m);
    model->commit(*none_cache, iota_n(m));
    model->commit(*full_cache, iota_n(m));
    const int32_t next = tokens.front();
    std::vector<float> after_none(V), after_full(V);
    model->forward(*none_cache, std::vector<int32_t>{next}, std::vector<int32_t>{m},
                   std::vector<int32_t>{-1}, after_none.data());
    model->forward(*full_cache, std::vector<int32_t>{next}, std::vector<int32_t>{m},
                   std::vector<int32_t>{-1}, after_full.data());
    CHECK(std::memcmp(after_none.data(), after_full.data(), static_cast<size_t>(V) * 4) == 0);
  }
  auto cache = model->new_cache(16);
  CHECK_THROWS_AS(model->forward(*cache, std::vector<int32_t>{1, 2}, iota_n(2), chain_parents(2),
                                 nullptr, nullptr, 3),
                  specd::Error);
  CHECK_THROWS_AS(model->forward(*cache, std::vector<int32_t>{1, 2}, iota_n(2), chain_parents(2),
                                 nullptr, nullptr, 1),
                  specd::Error);
}

// One fixture per architecture layout the model reads (models/architecture.hpp).
std::vector<std::pair<std::string, FixtureSpec>> layouts() {
  std::vector<std::pair<std::string, FixtureSpec>> v;
  FixtureSpec s;
  s.seed = 21;
  v.emplace_back("llama", s);
  s.rope_freqs = true;
  v.emplace_back("llama-rope-freqs", s);
  s.rope_freqs = false;
  s.rope_scale = 4.0f;
  s.tied = true;
  v.emplace_back("llama-linear-scaling-tied", s);
  s = FixtureSpec{};
  s.qkv_bias = true;
  v.emplace_back("llama-qkv-bias", s);
  s = FixtureSpec{};
  s.architecture = "qwen2";
  v.emplace_back("qwen2", s);
  s.architecture = "qwen3";
  s.head_dim = 32;  // q is 4 x 32 = 128 wide while d is 64, as in Qwen3
  v.emplace_back("qwen3", s);
  s.head_dim = 128;  // KV cache rows of 2 x 128 f32, 1 KiB: padded (models/kv_layout.hpp)
  v.emplace_back("qwen3-padded-kv-rows", s);
  s.architecture = "qwen3moe";
  s.head_dim = 32;
  v.emplace_back("qwen3moe", s);
  FixtureSpec fused = s;
  fused.fused_gate_up_exps = true;
  v.emplace_back("qwen3moe-fused-gate-up-exps", fused);
  // Heads of 32 as in gpt-oss (64 there, not d / n_head), YaRN with its factor and original
  // context, a window of 8 on the even layers: 40 positions slide past it.
  FixtureSpec oss = s;
  oss.architecture = "gpt-oss";
  oss.yarn_scale = 32.0f;
  v.emplace_back("gpt-oss", oss);
  oss.f32_keys = {{"gpt-oss.rope.scaling.yarn_beta_fast", 8.0f},  // a ramp over other pairs
                  {"gpt-oss.rope.scaling.yarn_beta_slow", 2.0f}};
  v.emplace_back("gpt-oss-yarn-betas", oss);
  s.architecture = "phi3";
  s.head_dim = 0;
  v.emplace_back("phi3", s);
  s.separate_qkv = true;
  v.emplace_back("phi3-separate-qkv", s);
  return v;
}

TEST_CASE("every architecture layout matches the naive reference (f32, f16 and q8_0 weights)") {
  for (auto [name, s] : layouts()) {
    for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0}) {
      s.matrix_type = type;
      const std::string type_name = ggml_type_name(type);
      CAPTURE(name);
      CAPTURE(type_name);
      const std::string path =
          write_fixture(s, "arch-" + name + "-" + ggml_type_name(type) + ".gguf");
      std::mt19937 rng(8);
      // 40 positions: far enough that rope factors and scaling change the angles visibly.
      compare_to_naive(path, random_tokens(rng, 40, static_cast<int32_t>(s.vocab)), 1e-4);
    }
  }
}

TEST_CASE("the architecture's steps change the logits (each layout differs from plain llama)") {
  std::mt19937 rng(9);
  const auto tokens = random_tokens(rng, 40, 96);
  auto logits_of = [&](const FixtureSpec& s, const std::string& file) {
    auto model = LlamaModel::load(write_fixture(s, file), cpu_device());
    auto cache = model->new_cache(64);
    return run_chain(*model, *cache, tokens);
  };
  FixtureSpec llama;
  const auto base = logits_of(llama, "steps-llama.gguf");
  FixtureSpec freqs = llama;
  freqs.rope_freqs = true;  // same weights, frequencies divided
  CHECK(logits_of(freqs, "steps-freqs.gguf") != base);
  FixtureSpec scaled = llama;
  scaled.rope_scale = 2.0f;
  CHECK(logits_of(scaled, "steps-scaled.gguf") != base);
  FixtureSpec yarn = llama;
  yarn.yarn_scale = 2.0f;
  const auto yarn_logits = logits_of(yarn, "steps-yarn.gguf");
  CHECK(yarn_logits != base);
  CHECK(yarn_logits != logits_of(scaled, "steps-scaled.gguf"));
  // gpt-oss's window: the same weights attending 8 keys on the even layers, or all 40.
  FixtureSpec oss;
  oss.architecture = "gpt-oss";
  oss.head_dim = 32;
  const auto windowed = logits_of(oss, "steps-oss-window.gguf");
  oss.sliding_window = 64;
  const auto whole = logits_of(oss, "steps-oss-whole.gguf");
  CHECK(windowed != whole);
  // The first 8 positions see the same keys either way.
  CHECK(std::equal(windowed.begin(), windowed.begin() + 8 * 96, whole.begin()));
}

TEST_CASE("verifying a chain is bit-identical to single steps for every architecture layout") {
  for (auto [name, s] : layouts()) {
    CAPTURE(name);
    auto model = LlamaModel::load(write_fixture(s, "inv-" + name + ".gguf"), cpu_device());
    CHECK(model->info().architecture == s.architecture);
    const int32_t V = model->info().vocab_size;
    std::mt19937 rng(10);
    const auto prompt = random_tokens(rng, 5, V);
    for (int32_t m : {1, 4, 17}) check_chain_matches_steps(*model, rng, prompt, m, 64);
  }
}

TEST_CASE("verifying a chain of m tokens is bit-identical to m single steps") {
  FixtureSpec s;
  const std::string path = write_fixture(s, "invariance.gguf");
  auto model = LlamaModel::load(path, cpu_device());
  const int32_t V = model->info().vocab_size;
  std::mt19937 rng(5);
  const auto prompt = random_tokens(rng, 7, V);
  for (int32_t m : {1, 2, 3, 5, 8, 16, 33, 64})
    check_chain_matches_steps(*model, rng, prompt, m, 128);
}

TEST_CASE("verifying a draft tree is bit-identical to decoding each path, and commit compacts") {
  FixtureSpec s;
  s.matrix_type = GgmlType::kQ8_0;
  const std::string path = write_fixture(s, "tree.gguf");
  auto model = LlamaModel::load(path, cpu_device());
  const int32_t V = model->info().vocab_size, d = model->info().n_embd;
  std::mt19937 rng(6);
  const auto prompt = random_tokens(rng, 9, V);
  //        0
  //      /   \      (batch rows; row 0 is the root, the last accepted token)
  //     1     2
  //    / \    |
  //   3   4   5
  //   |       |
  //   6       7
  const std::vector<int32_t> parents = {-1, 0, 0, 1, 1, 2, 3, 5};
  const int32_t m = static_cast<int32_t>(parents.size());
  const auto tokens = random_tokens(rng, m, V);
  std::vector<int32_t> positions(m);
  for (int32_t i = 0; i < m; ++i) positions[i] = parents[i] < 0 ? 9 : positions[parents[i]] + 1;

  auto cache = model->new_cache(64);
  run_chain(*model, *cache, prompt);
  std::vector<float> tree(static_cast<size_t>(m) * V), tree_hidden(static_cast<size_t>(m) * d);
  model->forward(*cache, tokens, positions, parents, tree.data(), tree_hidden.data());

  auto path_of = [&](int32_t i) {
    std::vector<int32_t> p;
    for (int32_t a = i; a >= 0; a = parents[a]) p.push_back(a);
    std::reverse(p.begin(), p.end());
    return p;
  };
  for (int32_t i = 0; i < m; ++i) {
    auto c = model->new_cache(64);
    run_chain(*model, *c, prompt);
    std::vector<float> last, hid(d);
    for (int32_t r : path_of(i)) {
      last.assign(V, 0.0f);
      model->forward(*c, std::vector<int32_t>{tokens[r]}, std::vector<int32_t>{c->size()},
                     std::vector<int32_t>{-1}, last.data(), hid.data());
      model->commit(*c, std::vector<int32_t>{0});
    }
    INFO("tree node " << i);
    CHECK(std::memcmp(last.data(), tree.data() + static_cast<size_t>(i) * V, V * 4) == 0);
    CHECK(std::memcmp(hid.data(), tree_hidden.data() + static_cast<size_t>(i) * d, d * 4) == 0);
  }

  // Accept the path 0 -> 2 -> 5 -> 7, then decode one more token: it must equal decoding
  // prompt + that path one token at a time.
  const std::vector<int32_t> kept = {0, 2, 5, 7};
  CHECK_THROWS_AS(model->commit(*cache, std::vector<int32_t>{0, 3}), Error);  // 3 is not 0's child
  model->commit(*cache, kept);
  CHECK(cache->size() == 9 + 4);
  const int32_t next = tokens[4];
  std::vector<float> after(V);
  model->forward(*cache, std::vector<int32_t>{next}, std::vector<int32_t>{13},
                 std::vector<int32_t>{-1}, after.data());

  auto ref = model->new_cache(64);
  run_chain(*model, *ref, prompt);
  for (int32_t r : kept) run_chain(*model, *ref, {tokens[r]});
  const auto want = run_chain(*model, *ref, {next});
  CHECK(std::memcmp(after.data(), want.data(), V * 4) == 0);

  // Truncate back into the prompt and continue: equals a fresh decode.
  model->commit(*cache, std::vector<int32_t>{});
  model->truncate(*cache, 5);
  CHECK(cache->size() == 5);
  const auto again = run_chain(*model, *cache, {prompt[5]});
  auto fresh = model->new_cache(64);
  run_chain(*model, *fresh, std::vector<int32_t>(prompt.begin(), prompt.begin() + 5));
  const auto want2 = run_chain(*model, *fresh, {prompt[5]});
  CHECK(std::memcmp(again.data(), want2.data(), V * 4) == 0);
}

TEST_CASE("bad model files and bad calls give clear errors naming the file and tensor") {
  auto message_of = [](const FixtureSpec& s, const std::string& file) {
    const std::string path = write_fixture(s, file);
    try {
      LlamaModel::load(path, cpu_device());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  FixtureSpec arch;
  arch.architecture = "gpt2";
  std::string msg = message_of(arch, "bad-arch.gguf");
  CHECK(msg.find("bad-arch.gguf") != std::string::npos);
  CHECK(msg.find("gpt2") != std::string::npos);

  FixtureSpec missing;
  missing.skip_tensor = "blk.1.ffn_up.weight";
  msg = message_of(missing, "missing.gguf");
  CHECK(msg.find("missing.gguf") != std::string::npos);
  CHECK(msg.find("blk.1.ffn_up.weight") != std::string::npos);

  FixtureSpec shape;
  shape.bad_shape_tensor = "blk.0.attn_k.weight";
  msg = message_of(shape, "bad-shape.gguf");
  CHECK(msg.find("bad-shape.gguf") != std::string::npos);
  CHECK(msg.find("blk.0.attn_k.weight") != std::string::npos);
  CHECK(msg.find("expected") != std::string::npos);

  const std::string path = write_fixture(FixtureSpec{}, "calls.gguf");
  auto model = LlamaModel::load(path, cpu_device());
  auto cache = model->new_cache(4);
  std::vector<float> logits(8 * model->info().vocab_size);
  CHECK_THROWS_AS(model->forward(*cache, std::vector<int32_t>{1000}, std::vector<int32_t>{0},
                                 std::vector<int32_t>{-1}, logits.data()),
                  Error);
  CHECK_THROWS_AS(model->forward(*cache, std::vector<int32_t>{1, 2}, std::vector<int32_t>{0, 1},
                                 std::vector<int32_t>{-1, 1}, logits.data()),
                  Error);
  CHECK_THROWS_AS(model->forward(*cache, iota_n(5), iota_n(5), chain_parents(5), logits.data()),
                  Error);  // exceeds capacity 4
  CHECK_THROWS_AS(model->truncate(*cache, 1), Error);
}

TEST_CASE("architecture files with missing parts, unsupported keys or an old backend are refused" *
          SPECD_MAY_SKIP) {
  auto message_of = [](const std::string& path, Device& device) {
    try {
      LlamaModel::load(path, device);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  FixtureSpec qwen2;
  qwen2.architecture = "qwen2";
  qwen2.skip_tensor = "blk.1.attn_v.bias";
  std::string msg = message_of(write_fixture(qwen2, "qwen2-no-bias.gguf"), cpu_device());
  CHECK(msg.find("qwen2-no-bias.gguf") != std::string::npos);
  CHECK(msg.find("blk.1.attn_v.bias") != std::string::npos);

  FixtureSpec qwen3;
  qwen3.architecture = "qwen3";
  qwen3.skip_tensor = "blk.0.attn_k_norm.weight";
  msg = message_of(write_fixture(qwen3, "qwen3-no-norm.gguf"), cpu_device());
  CHECK(msg.find("blk.0.attn_k_norm.weight") != std::string::npos);

  // Tensors of features the architecture lacks, or this runtime does not read, are refused.
  FixtureSpec qwen3_freqs;
  qwen3_freqs.architecture = "qwen3";
  qwen3_freqs.extra_tensor = "rope_freqs.weight";
  msg = message_of(write_fixture(qwen3_freqs, "qwen3-freqs.gguf"), cpu_device());
  CHECK(msg.find("qwen3-freqs.gguf") != std::string::npos);
  CHECK(msg.find("'rope_freqs.weight' is not used by a 2-layer qwen3 model") != std::string::npos);
  FixtureSpec phi3_long;
  phi3_long.architecture = "phi3";
  phi3_long.extra_tensor = "rope_factors_long.weight";
  msg = message_of(write_fixture(phi3_long, "phi3-long.gguf"), cpu_device());
  CHECK(msg.find("rope_factors_long.weight") != std::string::npos);

  // Rope scaling types other than none, linear and yarn are refused naming the key, and so are
  // YaRN's model-specific keys.
  FixtureSpec longrope;
  longrope.string_keys = {{"llama.rope.scaling.type", "longrope"}};
  msg = message_of(write_fixture(longrope, "longrope.gguf"), cpu_device());
  CHECK(msg.find("longrope.gguf: llama.rope.scaling.type = 'longrope' is not supported") !=
        std::string::npos);
  FixtureSpec yarn_orig;
  yarn_orig.yarn_scale = 4.0f;
  yarn_orig.u32_keys = {{"llama.rope.scaling.original_context_length", 0}};
  msg = message_of(write_fixture(yarn_orig, "yarn-orig.gguf"), cpu_device());
  CHECK(msg.find("yarn-orig.gguf: llama.rope.scaling.original_context_length = 0 is out of "
                 "range") != std::string::npos);
  FixtureSpec yarn_small;  // a factor below 1 would shrink q and k
  yarn_small.yarn_scale = 0.5f;
  msg = message_of(write_fixture(yarn_small, "yarn-small.gguf"), cpu_device());
  CHECK(msg.find("yarn-small.gguf: llama.rope.scaling.factor = 0.500000 must be at least 1 for "
                 "yarn scaling") != std::string::npos);
  FixtureSpec tiny_factor;  // 1 / factor overflows
  tiny_factor.rope_scale = 1e-39f;
  msg = message_of(write_fixture(tiny_factor, "tiny-factor.gguf"), cpu_device());
  CHECK(msg.find("tiny-factor.gguf: llama.rope.scaling.factor") != std::string::npos);
  CHECK(msg.find("is too small") != std::string::npos);
  // gpt-oss's own tensors and keys: each missing one is named.
  FixtureSpec oss;
  oss.architecture = "gpt-oss";
  oss.head_dim = 32;
  for (const char* missing :
       {"blk.1.attn_sinks.weight", "blk.0.attn_output.bias", "blk.1.ffn_gate_inp.bias",
        "blk.0.ffn_down_exps.bias", "blk.0.post_attention_norm.weight"}) {
    CAPTURE(missing);
    oss.skip_tensor = missing;
    msg = message_of(write_fixture(oss, "oss-missing.gguf"), cpu_device());
    CHECK(msg.find("oss-missing.gguf") != std::string::npos);
    CHECK(msg.find(missing) != std::string::npos);
  }
  oss.skip_tensor.clear();
  oss.bad_shape_tensor = "blk.0.ffn_up_exps.bias";
  msg = message_of(write_fixture(oss, "oss-bias-shape.gguf"), cpu_device());
  CHECK(msg.find("tensor 'blk.0.ffn_up_exps.bias' has shape") != std::string::npos);
  oss.bad_shape_tensor.clear();
  oss.u32_keys = {{"gpt-oss.attention.sliding_window", 0}};
  msg = message_of(write_fixture(oss, "oss-window.gguf"), cpu_device());
  CHECK(msg.find("oss-window.gguf: gpt-oss.attention.sliding_window = 0 is out of range") !=
        std::string::npos);
  oss.u32_keys = {{"gpt-oss.rope.dimension_count", 16}};
  msg = message_of(write_fixture(oss, "oss-rot.gguf"), cpu_device());
  CHECK(msg.find("oss-rot.gguf: gpt-oss.rope.dimension_count 16 is not the head size 32") !=
        std::string::npos);
  // A file whose last blocks are MTP layers (llama.cpp's nextn) is refused, not run as if
  // they were ordinary layers.
  FixtureSpec nextn;
  nextn.u32_keys = {{"llama.nextn_predict_layers", 1}};
  msg = message_of(write_fixture(nextn, "nextn.gguf"), cpu_device());
  CHECK(msg.find("nextn.gguf: its last 1 of 2 blocks are MTP") != std::string::npos);
  FixtureSpec none;  // type none: the factor is ignored, as llama.cpp does
  none.string_keys = {{"llama.rope.scaling.type", "none"}};
  none.rope_scale = 0;
  CHECK(message_of(write_fixture(none, "none.gguf"), cpu_device()) == "no error");

  // An unknown architecture is refused naming the file, the architecture and the supported ones.
  FixtureSpec mamba;
  mamba.architecture = "mamba";
  msg = message_of(write_fixture(mamba, "mamba.gguf"), cpu_device());
  CHECK(msg.find("mamba.gguf: architecture 'mamba' is not supported (supported: llama, qwen2, "
                 "qwen3, phi3, qwen35, qwen3moe, gpt-oss, qwen35moe)") != std::string::npos);
  // Experts where the architecture has none (a Mixtral-style llama file) are refused by name;
  // a mixture of experts with more experts per token than experts, or without its experts.
  FixtureSpec mixtral;
  mixtral.u32_keys = {{"llama.expert_count", 8}};
  msg = message_of(write_fixture(mixtral, "mixtral.gguf"), cpu_device());
  CHECK(msg.find("mixtral.gguf: llama.expert_count is 8: mixture-of-experts 'llama' files are not "
                 "supported") != std::string::npos);
  FixtureSpec moe;
  moe.architecture = "qwen3moe";
  moe.n_expert_used = 9;
  msg = message_of(write_fixture(moe, "moe-too-many.gguf"), cpu_device());
  CHECK(msg.find("moe-too-many.gguf: qwen3moe.expert_used_count 9 is more than "
                 "qwen3moe.expert_count 8") != std::string::npos);
  moe.n_expert_used = 2;
  moe.skip_tensor = "blk.1.ffn_up_exps.weight";
  msg = message_of(write_fixture(moe, "moe-no-up.gguf"), cpu_device());
  CHECK(msg.find("blk.1.ffn_up_exps.weight") != std::string::npos);
  moe.skip_tensor.clear();
  moe.u32_keys = {{"qwen3moe.expert_count", 6}};  // the tensors hold 8
  msg = message_of(write_fixture(moe, "moe-count.gguf"), cpu_device());
  CHECK(msg.find("moe-count.gguf: tensor 'blk.0.ffn_gate_inp.weight' has shape [64, 8], expected "
                 "[64, 6]") != std::string::npos);
  // An embedding of 0 rows: no vocabulary, said with the file.
  FixtureSpec empty_vocab;
  empty_vocab.vocab = 0;
  msg = message_of(write_fixture(empty_vocab, "empty-vocab.gguf"), cpu_device());
  CHECK(msg.find("empty-vocab.gguf: tensor 'token_embd.weight' has 0 rows") != std::string::npos);
  // A NUL inside the name is shown escaped (it would cut the message short).
  FixtureSpec nul;
  nul.architecture = std::string("lla\0ma", 6);
  msg = message_of(write_fixture(nul, "nul-arch.gguf"), cpu_device());
  CHECK(msg.find("architecture 'lla\\x00ma' is not supported (supported: llama") !=
        std::string::npos);

  FixtureSpec freqs;
  freqs.rope_freqs = true;
  const std::string llama_freqs = write_fixture(freqs, "llama-freqs.gguf");

  // A backend built against ABI 0.1 has neither neox rope nor a bias add: qwen2 is refused
  // naming the backend, the file and the architecture; a plain llama file still loads.
  LoadedPlugin old = *registry().find("cpu", SPECD_KIND_BACKEND);
  old.abi_minor = 1;
  Backend old_backend(old);
  DeviceOptions opt;
  opt.threads = 1;
  auto old_device = old_backend.open(opt);
  FixtureSpec q2;
  q2.architecture = "qwen2";
  msg = message_of(write_fixture(q2, "qwen2-old-backend.gguf"), *old_device);
  CHECK(msg.find("backend 'cpu'") != std::string::npos);
  CHECK(msg.find("ABI 0.1") != std::string::npos);
  CHECK(msg.find("qwen2-old-backend.gguf") != std::string::npos);
  CHECK(msg.find("'qwen2'") != std::string::npos);
  msg = message_of(llama_freqs, *old_device);
  CHECK(msg.find("rope frequency factors") != std::string::npos);
  const std::string plain = write_fixture(FixtureSpec{}, "llama-old-backend.gguf");
  CHECK(message_of(plain, *old_device) == "no error");
  // ... and runs: its rope and adds use nothing of ABI 0.2.
  auto model = LlamaModel::load(plain, *old_device);
  auto cache = model->new_cache(8);
  std::vector<float> logits(3 * static_cast<size_t>(model->info().vocab_size));
  CHECK_NOTHROW(model->forward(*cache, iota_n(3), iota_n(3), chain_parents(3), logits.data()));
}

// Whether the PyTorch reference can run here (MESSAGE saying why not otherwise).
bool torch_available() {
  const std::string script = std::string(SPECD_SOURCE_DIR) + "/train/reference_forward.py";
  if (!std::filesystem::exists(script)) {
    ::specd::test::skip_missing(script, " does not exist");
    return false;
  }
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    ::specd::test::skip_missing("/usr/bin/python3 cannot import torch");
    return false;
  }
  return true;
}

// max |specd - PyTorch| over the logits of `tokens` at positions 0.. (train/reference_forward.py).
double torch_difference(const std::string& model_path, const std::vector<int32_t>& tokens) {
  const std::string out = run_reference_forward(model_path, tokens);
  std::vector<double> ref;
  for (size_t i = out.find("\"logits\""); i != std::string::npos && i < out.size();) {
    const size_t j = out.find_first_of("-0123456789", i);
    if (j == std::string::npos) break;
    char* end = nullptr;
    ref.push_back(std::strtod(out.c_str() + j, &end));
    i = static_cast<size_t>(end - out.c_str());
  }
  auto model = LlamaModel::load(model_path, cpu_device());
  const int32_t V = model->info().vocab_size, T = static_cast<int32_t>(tokens.size());
  REQUIRE(ref.size() == static_cast<size_t>(T) * V);
  auto cache = model->new_cache(T);
  std::vector<float> logits(static_cast<size_t>(T) * V);
  model->forward(*cache, tokens, iota_n(T), chain_parents(T), logits.data());
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(logits[i] - ref[i]));
  MESSAGE(model_path << ": max |specd - PyTorch| over " << T << " x " << V << " logits: " << worst);
  return worst;
}

TEST_CASE("logits match the PyTorch reference (train/reference_forward.py) on models/target.gguf" *
          SPECD_MAY_SKIP) {
  // $SPECD_TEST_TORCH_MODEL may name another model GGUF to compare.
  const char* env_model = std::getenv("SPECD_TEST_TORCH_MODEL");
  const std::string model_path = env_model && *env_model
                                     ? std::string(env_model)
                                     : std::string(SPECD_SOURCE_DIR) + "/models/target.gguf";
  if (!std::filesystem::exists(model_path)) {
    ::specd::test::skip_missing(model_path, " does not exist");
    return;
  }
  if (!torch_available()) return;
  CHECK(torch_difference(model_path, {1, 2, 3}) <= 1e-4);
}

TEST_CASE("every architecture layout matches the PyTorch reference (fixtures and llama.cpp's)" *
          SPECD_MAY_SKIP) {
  if (!torch_available()) return;
  std::mt19937 rng(12);
  for (auto [name, s] : layouts()) {
    CAPTURE(name);
    s.matrix_type = GgmlType::kF16;
    const std::string path = write_fixture(s, "torch-" + name + ".gguf");
    CHECK(torch_difference(path, random_tokens(rng, 24, static_cast<int32_t>(s.vocab))) <= 1e-4);
  }
  const std::string compat = std::string(SPECD_SOURCE_DIR) + "/../shared/compat/arch";
  if (!std::filesystem::exists(compat)) {
    ::specd::test::skip_missing("the llama.cpp files: ", compat, " is not there");
    return;
  }
  for (const char* file : {"llama", "llama-tied", "llama-rope-freqs", "qwen2", "qwen3"}) {
    CAPTURE(file);
    CHECK(torch_difference(compat + "/" + file + ".gguf", random_tokens(rng, 24, 4096)) <= 1e-4);
  }
}
