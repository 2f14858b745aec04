// LlamaModel::forward_batch: the rows of a batched pass over several sequences are
// bit-identical to each sequence's forward() alone (chains, trees, prefill chunks; f32 and
// quantized weights), a cache grown in blocks continues as if it had been large, and a
// BatchVerifier prefills in chunks equal to decoding one token at a time; blocks shared through
// the prefix cache compute what a fresh prefill computes, and are evicted oldest first.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "../backend/backend_test_util.hpp"
#include "backend/backend.hpp"
#include "engine/batch_verifier.hpp"
#include "model_fixture.hpp"
#include "model_runs.hpp"
#include "models/llama_model.hpp"
#include "token_rows.hpp"

using namespace specd;
using namespace specd::test;

namespace {

// One sequence's step: its rows (a chain or a tree after a committed prompt).
struct Step {
  std::vector<int32_t> prompt, tokens, positions, parents;
  int32_t first_logit_row = 0;
};

Step chain_step(std::mt19937& rng, int32_t vocab, int32_t prompt, int32_t m, int32_t first) {
  Step s;
  s.prompt = random_tokens(rng, prompt, vocab);
  s.tokens = random_tokens(rng, m, vocab);
  s.positions = iota_n(m, prompt);
  s.parents = iota_n(m, -1);
  s.first_logit_row = first;
  return s;
}

Step tree_step(std::mt19937& rng, int32_t vocab, int32_t prompt) {
  Step s;
  s.prompt = random_tokens(rng, prompt, vocab);
  s.parents = {-1, 0, 0, 1, 1, 2, 3, 5};
  s.tokens = random_tokens(rng, 8, vocab);
  for (size_t i = 0; i < s.parents.size(); ++i)
    s.positions.push_back(s.parents[i] < 0 ? prompt : s.positions[s.parents[i]] + 1);
  return s;
}

// Runs `tokens` as a prefill from position `start` (no logits) and commits them.
void prefill(LlamaModel& model, KvCache& cache, const std::vector<int32_t>& tokens, int32_t start) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  model.forward(cache, tokens, iota_n(n, start), iota_n(n, -1), nullptr, nullptr, n);
  model.commit(cache, iota_n(n, 0));
}

// Verifying `tokens` as a chain from position `start` gives the same logits, bit for bit,
// after cache `a` of `model_a` as after cache `b` of `model_b`.
void check_same_logits(LlamaModel& model_a, KvCache& a, LlamaModel& model_b, KvCache& b,
                       const std::vector<int32_t>& tokens, int32_t start) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  std::vector<float> x(static_cast<size_t>(n) * model_a.info().vocab_size), y(x.size());
  model_a.forward(a, tokens, iota_n(n, start), iota_n(n, -1), x.data());
  model_b.forward(b, tokens, iota_n(n, start), iota_n(n, -1), y.data());
  CHECK(std::memcmp(x.data(), y.data(), x.size() * 4) == 0);
}

std::unique_ptr<KvCache> prefilled(LlamaModel& model, const std::vector<int32_t>& prompt) {
  auto cache = model.new_cache(256);
  const int32_t n = static_cast<int32_t>(prompt.size());
  if (n == 0) return cache;
  prefill(model, *cache, prompt, 0);
  return cache;
}

void check_batch_equals_alone(const FixtureSpec& spec, const std::string& file) {
  auto model = LlamaModel::load(write_fixture(spec, file), two_thread_cpu_device());
  const int32_t V = model->info().vocab_size, d = model->info().n_embd;
  std::mt19937 rng(11);
  // 40 + 8 + 30 + 1 + 64 rows: the pieces of 64 rows cut across sequences.
  std::vector<Step> steps = {chain_step(rng, V, 5, 40, 0), tree_step(rng, V, 9),
                             chain_step(rng, V, 0, 30, 29), chain_step(rng, V, 12, 1, 0),
                             chain_step(rng, V, 3, 64, 64)};
  const size_t n = steps.size();
  std::vector<std::unique_ptr<KvCache>> caches;
  std::vector<std::vector<float>> logits(n), hidden(n);
  std::vector<ForwardEntry> entries(n);
  for (size_t e = 0; e < n; ++e) {
    const Step& s = steps[e];
    caches.push_back(prefilled(*model, s.prompt));
    const size_t m = s.tokens.size();
    logits[e].resize((m - s.first_logit_row) * V);
    hidden[e].resize(m * d);
    entries[e] = {caches[e].get(),  s.tokens,         s.positions,      s.parents,
                  logits[e].data(), hidden[e].data(), s.first_logit_row};
  }
  model->forward_batch(entries);

  for (size_t e = 0; e < n; ++e) {
    const Step& s = steps[e];
    const size_t m = s.tokens.size();
    auto alone = prefilled(*model, s.prompt);
    std::vector<float> want(logits[e].size() + 1), want_hidden(m * d);
    model->forward(*alone, s.tokens, s.positions, s.parents, want.data(), want_hidden.data(),
                   s.first_logit_row);
    INFO("entry " << e);
    // (an entry with no logit rows has an empty, possibly null, buffer: nothing to compare)
    CHECK((logits[e].empty() ||
           std::memcmp(want.data(), logits[e].data(), logits[e].size() * 4) == 0));
    CHECK(std::memcmp(want_hidden.data(), hidden[e].data(), m * d * 4) == 0);
    // The KV rows written by the batch: keep row 0 and decode one more token on both.
    model->commit(*alone, std::vector<int32_t>{0});
    model->commit(*caches[e], std::vector<int32_t>{0});
    std::vector<float> a(V), b(V);
    const int32_t pos = s.positions[0] + 1, tok = s.tokens.back();
    model->forward(*alone, std::vector<int32_t>{tok}, std::vector<int32_t>{pos},
                   std::vector<int32_t>{-1}, a.data());
    model->forward(*caches[e], std::vector<int32_t>{tok}, std::vector<int32_t>{pos},
                   std::vector<int32_t>{-1}, b.data());
    CHECK(std::memcmp(a.data(), b.data(), V * 4) == 0);
  }
}

}  // namespace

TEST_CASE("a batched forward's rows equal each sequence's forward alone, bit for bit (f32)") {
  FixtureSpec s;
  s.matrix_type = GgmlType::kF32;
  check_batch_equals_alone(s, "batch-f32.gguf");
}

TEST_CASE("a batched forward's rows equal each sequence's forward alone, bit for bit (q8_0)") {
  FixtureSpec s;
  s.matrix_type = GgmlType::kQ8_0;
  check_batch_equals_alone(s, "batch-q8.gguf");
}

TEST_CASE("a mixture of experts' batched rows equal each sequence's alone, bit for bit") {
  // qwen3moe: the rows of a piece share experts in every combination, and each expert's matmul
  // runs over whichever rows chose it.
  FixtureSpec s;
  s.architecture = "qwen3moe";
  s.n_expert = 16;
  s.n_expert_used = 4;
  s.matrix_type = GgmlType::kQ8_0;
  check_batch_equals_alone(s, "batch-moe-q8.gguf");
  s.matrix_type = GgmlType::kF16;
  check_batch_equals_alone(s, "batch-moe-f16.gguf");
  // gpt-oss: biased experts, sinks, and windows of 8 that rows of long chains slide past.
  s.architecture = "gpt-oss";
  s.head_dim = 32;
  s.yarn_scale = 32.0f;
  check_batch_equals_alone(s, "batch-gpt-oss-f16.gguf");
}

TEST_CASE("a mixture of experts counts the experts its passes run (a dense model none)") {
  FixtureSpec s;
  s.architecture = "qwen3moe";
  s.n_expert = 16;
  s.n_expert_used = 4;
  auto model = LlamaModel::load(write_fixture(s, "moe-count.gguf"), two_thread_cpu_device());
  CHECK(model->info().n_expert == 16);
  CHECK(model->info().n_expert_used == 4);
  auto cache = model->new_cache(64);
  std::mt19937 rng(4);
  const int32_t V = model->info().vocab_size, layers = model->info().n_layer;
  std::vector<float> logits(static_cast<size_t>(16) * V);
  auto experts_of_pass = [&](int32_t m) {
    const int64_t before = model->experts_run();
    model->forward(*cache, random_tokens(rng, m, V), iota_n(m, cache->size()), chain_parents(m),
                   logits.data());
    return model->experts_run() - before;
  };
  CHECK(experts_of_pass(1) == layers * 4);  // one row: exactly its experts in each layer
  const int64_t sixteen = experts_of_pass(16);
  CHECK(sixteen > layers * 4);  // 16 random rows wake more, each expert counted once
  CHECK(sixteen <= layers * 16);
  FixtureSpec dense;
  auto dense_model =
      LlamaModel::load(write_fixture(dense, "dense-count.gguf"), two_thread_cpu_device());
  auto dense_cache = dense_model->new_cache(8);
  std::vector<float> one(static_cast<size_t>(dense_model->info().vocab_size));
  dense_model->forward(*dense_cache, std::vector<int32_t>{1}, std::vector<int32_t>{0},
                       std::vector<int32_t>{-1}, one.data());
  CHECK(dense_model->experts_run() == 0);
}

TEST_CASE("a batched forward refuses two entries over one cache and a bad entry, naming it") {
  FixtureSpec s;
  auto model = LlamaModel::load(write_fixture(s, "batch-bad.gguf"), two_thread_cpu_device());
  auto cache = model->new_cache(16);
  const std::vector<int32_t> t = {1}, p = {0}, par = {-1};
  std::vector<float> l(model->info().vocab_size * 2);
  std::vector<ForwardEntry> two = {{cache.get(), t, p, par, l.data()},
                                   {cache.get(), t, p, par, l.data()}};
  CHECK_THROWS_WITH_AS(model->forward_batch(two), doctest::Contains("share one cache"), Error);
  const std::vector<int32_t> bad = {model->info().vocab_size};
  std::vector<ForwardEntry> one = {{cache.get(), bad, p, par, l.data()}};
  CHECK_THROWS_WITH_AS(model->forward_batch(one), doctest::Contains("outside the vocabulary"),
                       Error);
}

TEST_CASE(
    "a cache whose blocks interleave with another's in the pool gives the bits of one alone") {
  FixtureSpec s;
  auto model = LlamaModel::load(write_fixture(s, "batch-paged.gguf"), two_thread_cpu_device());
  auto lone_model = LlamaModel::load(write_fixture(s, "batch-paged.gguf"), two_thread_cpu_device());
  const int32_t V = model->info().vocab_size;
  std::mt19937 rng(3);
  const auto prompt = random_tokens(rng, 40, V), other = random_tokens(rng, 40, V);
  auto a = model->new_cache(128), b = model->new_cache(128);
  auto lone = lone_model->new_cache(128);
  // Five rows at a time into a and b in turn: each takes a block of 16 every few steps, so
  // their blocks alternate in the pool.
  for (int32_t at = 0; at < 40; at += 5) {
    for (auto [c, toks] : {std::pair{a.get(), &prompt}, std::pair{b.get(), &other}}) {
      const std::vector<int32_t> chunk(toks->begin() + at, toks->begin() + at + 5);
      prefill(*model, *c, chunk, at);
    }
  }
  prefill(*lone_model, *lone, prompt, 0);
  CHECK(a->blocks() == std::vector<int32_t>{0, 2, 4});
  CHECK(b->blocks() == std::vector<int32_t>{1, 3, 5});
  check_same_logits(*model, *a, *lone_model, *lone, random_tokens(rng, 30, V), 40);
}

TEST_CASE("the KV pool reuses freed blocks, keeps rows when it grows, and moves a tree's path") {
  FixtureSpec s;
  auto model = LlamaModel::load(write_fixture(s, "batch-pool.gguf"), two_thread_cpu_device());
  const int32_t V = model->info().vocab_size;
  std::mt19937 rng(4);
  KvPool& pool = model->kv_pool();
  {
    auto c = model->new_cache(40);
    CHECK(pool.blocks() >= 3);  // the capacity is promised up front
    const auto t = random_tokens(rng, 20, V);
    model->forward(*c, t, iota_n(20, 0), iota_n(20, -1), nullptr, nullptr, 20);
    CHECK(c->blocks().size() == 2u);  // blocks taken as rows are written
    CHECK(pool.used_blocks() == 2);
  }
  CHECK(pool.used_blocks() == 0);  // given back with the cache
  // A cache kept through a growth of the pool computes as before it.
  auto keep = model->new_cache(48);
  const auto t = random_tokens(rng, 30, V);
  prefill(*model, *keep, t, 0);
  const auto more = random_tokens(rng, 3, V);
  std::vector<float> before(3 * V), after(3 * V);
  model->forward(*keep, more, iota_n(3, 30), iota_n(3, -1), before.data());
  const int32_t blocks = pool.blocks();
  model->reserve_kv(int64_t{blocks} * LlamaModel::kKvBlockRows * 4);
  CHECK(pool.blocks() == blocks * 4);
  model->forward(*keep, more, iota_n(3, 30), iota_n(3, -1), after.data());
  CHECK(std::memcmp(before.data(), after.data(), before.size() * 4) == 0);
  // A tree over a block boundary: root at row 30, two children, the second's child; keeping
  // the second branch moves its rows into sequence order, as a chain run alone would give.
  const std::vector<int32_t> tree_tokens = {more[0], more[1], more[2], more[1]};
  const std::vector<int32_t> parents = {-1, 0, 0, 2}, positions = {30, 31, 31, 32};
  std::vector<float> logits(4 * V);
  model->forward(*keep, tree_tokens, positions, parents, logits.data());
  model->commit(*keep, std::vector<int32_t>{0, 2, 3});
  CHECK(keep->size() == 33);
  auto chain = model->new_cache(48);
  const std::vector<int32_t> path = {more[0], more[2], more[1]};
  std::vector<int32_t> whole(t.begin(), t.end());
  whole.insert(whole.end(), path.begin(), path.end());
  prefill(*model, *chain, whole, 0);
  check_same_logits(*model, *keep, *model, *chain, {more[2]}, 33);
}

TEST_CASE("prefix cache: adopted blocks compute what a fresh prefill computes; eviction order") {
  FixtureSpec s;
  auto model = LlamaModel::load(write_fixture(s, "batch-prefix.gguf"), two_thread_cpu_device());
  const int32_t V = model->info().vocab_size;
  const int32_t B = LlamaModel::kKvBlockRows;
  std::mt19937 rng(7);
  KvPool& pool = model->kv_pool();
  const auto prompt = random_tokens(rng, 40, V);
  const std::vector<int32_t> next = {prompt[3]};
  std::vector<float> want(V), got(V);
  auto a = model->new_cache(64);
  prefill(*model, *a, prompt, 0);
  CHECK(a->publish_next(prompt));
  CHECK(a->publish_next(prompt));
  CHECK_FALSE(a->publish_next(prompt));  // 8 rows of a third block: not full
  CHECK(a->shared_blocks() == 2);
  model->forward(*a, next, iota_n(1, 40), iota_n(1, -1), want.data());
  {
    // A prompt that starts the same takes the two blocks, prefills the rest in its own
    // chunks, and computes the next token's logits bit for bit.
    auto b = model->new_cache(64);
    CHECK(b->adopt_prefix(prompt, 40) == 2 * B);
    CHECK(b->blocks()[0] == a->blocks()[0]);
    CHECK(b->blocks()[1] == a->blocks()[1]);
    CHECK(pool.refs(a->blocks()[0]) == 2);
    const std::vector<int32_t> rest(prompt.begin() + 2 * B, prompt.end());
    prefill(*model, *b, rest, 2 * B);
    model->forward(*b, next, iota_n(1, 40), iota_n(1, -1), got.data());
    CHECK(std::memcmp(want.data(), got.data(), want.size() * 4) == 0);
    // A prefix that differs inside the second block takes only the first; one differing in
    // the first takes nothing.
    auto other = prompt;
    other[20] = (other[20] + 1) % V;
    auto c = model->new_cache(64);
    CHECK(c->adopt_prefix(other, 40) == B);
    other[2] = (other[2] + 1) % V;
    auto d = model->new_cache(64);
    CHECK(d->adopt_prefix(other, 40) == 0);
    // Another partition (a request's cache_salt) sees none of the blocks; its own are its.
    auto salted = model->new_cache(64);
    salted->set_prefix_partition(0x5a17);
    CHECK(salted->adopt_prefix(prompt, 40) == 0);
    CHECK(pool.find(-1, std::span(prompt).first(B), 0x5a17) == -1);
    CHECK(pool.find(-1, std::span(prompt).first(B)) == a->blocks()[0]);
    // A cache that holds shared blocks only takes more as they are published (a prefill that
    // waited behind one with the same start); one holding rows of its own takes none.
    auto e = model->new_cache(64);
    CHECK(e->adopt_prefix(std::span(prompt).first(B), 40) == B);
    CHECK(e->adopt_prefix(prompt, 40) == 2 * B);
    CHECK(e->blocks()[1] == a->blocks()[1]);
    CHECK(e->shared_blocks() == 2);
    e.reset();
    const std::vector<int32_t> own(other.begin(), other.begin() + 4);
    model->forward(*d, own, iota_n(4, 0), iota_n(4, -1), nullptr, nullptr, 4);
    CHECK_THROWS_WITH_AS(d->adopt_prefix(prompt, 40), doctest::Contains("pending"), Error);
    model->commit(*d, iota_n(4, 0));
    CHECK(d->adopt_prefix(prompt, 40) == 4);
    CHECK(d->shared_blocks() == 0);
    // Shared rows are read-only: a cut inside them is refused, one at a block boundary lets
    // the later blocks go.
    CHECK_THROWS_WITH_AS(b->truncate(20), doctest::Contains("shared KV block"), Error);
    b->truncate(B);
    CHECK(b->shared_blocks() == 1);
    CHECK(pool.refs(a->blocks()[1]) == 1);
  }
  // With no holder left, the published blocks stay parked with their rows, the prefix's tail
  // (released first) oldest; a take() with nothing else free evicts it, then the head.
  const int32_t head = a->blocks()[0], tail = a->blocks()[1];
  a.reset();
  CHECK(pool.parked_blocks() == 2);
  CHECK(pool.used_blocks() == 0);
  CHECK(pool.find(-1, std::span(prompt).first(B)) == head);
  std::vector<int32_t> taken;
  while (pool.free_blocks() > 2) taken.push_back(pool.take());
  CHECK(pool.evictions() == 0);
  taken.push_back(pool.take());
  CHECK(taken.back() == tail);
  CHECK(pool.evictions() == 1);
  CHECK(pool.find(-1, std::span(prompt).first(B)) == head);
  CHECK(pool.find(head, std::span(prompt).subspan(B, B)) == -1);
  taken.push_back(pool.take());
  CHECK(taken.back() == head);
  CHECK(pool.find(-1, std::span(prompt).first(B)) == -1);
  for (int32_t b : taken) pool.release(b);
  CHECK(pool.parked_blocks() == 0);
  CHECK(pool.used_blocks() == 0);
}

TEST_CASE(
    "a batch verifier prefills in chunks and takes blocks as it grows, equal to one token at a "
    "time") {
  FixtureSpec s;
  s.matrix_type = GgmlType::kQ8_0;
  auto model = LlamaModel::load(write_fixture(s, "batch-verifier.gguf"), two_thread_cpu_device());
  const int32_t V = model->info().vocab_size, d = model->info().n_embd;
  std::mt19937 rng(8);
  const auto prompt = random_tokens(rng, 150, V);
  BatchVerifier verifier(*model, /*max_rows=*/160, /*chunk_rows=*/64);
  CHECK(verifier.held_rows() == 0u);
  std::vector<float> hidden(149 * static_cast<size_t>(d));
  verifier.begin(prompt, hidden.data());
  int passes = 0;
  while (verifier.prefilling()) {
    const std::vector<ForwardEntry> e = {verifier.entry()};
    CHECK(e[0].tokens.size() <= 64u);
    model->forward_batch(e);
    verifier.pass_done();
    ++passes;
  }
  CHECK(passes == 3);  // 64 + 64 + 21 rows
  CHECK(verifier.committed() == 149u);
  CHECK(verifier.held_rows() == 160u);  // blocks of 16 for the 149 rows
  // A round: the root and a chain of two nodes.
  const std::vector<specd_token> nodes = {prompt[3], prompt[4]};
  const std::vector<int32_t> parents = {0, 1};
  const specd_draft_tree tree{
      sizeof(specd_draft_tree), 2,      0, SPECD_SIBLINGS_DETERMINISTIC, nodes.data(),
      parents.data(),           nullptr};
  std::vector<float> logits(3 * static_cast<size_t>(V));
  verifier.verify(prompt.back(), tree, logits.data(), nullptr);
  CHECK_FALSE(verifier.prefilling());
  model->forward_batch(std::vector<ForwardEntry>{verifier.entry()});
  verifier.pass_done();
  verifier.commit(std::vector<int32_t>{1, 2});
  CHECK(verifier.committed() == 152u);
  // Beyond the reservation: refused, naming it.
  const std::vector<specd_token> many(9, prompt[0]);
  const std::vector<int32_t> chain = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  const specd_draft_tree big{sizeof(specd_draft_tree),
                             9,
                             0,
                             SPECD_SIBLINGS_DETERMINISTIC,
                             many.data(),
                             chain.data(),
                             nullptr};
  CHECK_THROWS_WITH_AS(verifier.verify(prompt[0], big, logits.data(), nullptr),
                       doctest::Contains("does not fit"), Error);

  // The reference: every prompt token and the round's tokens one at a time.
  auto ref = model->new_cache(256);
  std::vector<float> one(V), h(d);
  for (int32_t i = 0; i < 150 + 2; ++i) {
    const int32_t t = i < 150 ? prompt[i] : nodes[i - 150];
    model->forward(*ref, std::vector<int32_t>{t}, std::vector<int32_t>{i}, std::vector<int32_t>{-1},
                   one.data(), h.data());
    model->commit(*ref, std::vector<int32_t>{0});
    if (i < 149) {
      INFO("prompt row " << i);
      CHECK(std::memcmp(h.data(), hidden.data() + static_cast<size_t>(i) * d, d * 4) == 0);
    } else {
      INFO("round row " << i - 149);
      CHECK(std::memcmp(one.data(), logits.data() + static_cast<size_t>(i - 149) * V, V * 4) == 0);
    }
  }
}
