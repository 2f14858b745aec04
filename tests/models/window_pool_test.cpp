// The sliding-window layers' pool (kv_pool.hpp, kv_cache.hpp): a cache gives back the blocks
// behind its window and computes, bit for bit, what a cache that held every row computes (the
// window never reads a block it gave back); a truncate that needs given-back rows is refused;
// a published prefix pins its window blocks, so a cache adopting it computes what a fresh
// prefill does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "common/error.hpp"
#include "model_fixture.hpp"
#include "model_runs.hpp"
#include "models/llama_model.hpp"
#include "token_rows.hpp"

using namespace specd;
using namespace specd::test;

namespace {

constexpr int32_t kLong = 260;  // rows: far past a window of 8 and its slack

std::unique_ptr<LlamaModel> gpt_oss(const std::string& file) {
  FixtureSpec s;
  s.architecture = "gpt-oss";
  s.head_dim = 32;
  s.matrix_type = GgmlType::kF32;
  return LlamaModel::load(write_fixture(s, file), two_thread_cpu_device());
}

// Runs `tokens` from row `start` in chunks of 16 rows (within the rows the device computes
// invariantly, so each row's bits do not depend on the chunking) and commits them.
void prefill(LlamaModel& model, KvCache& cache, std::span<const int32_t> tokens, int32_t start) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  for (int32_t i = 0; i < n; i += 16) {
    const int32_t m = std::min(16, n - i);
    model.forward(cache, tokens.subspan(static_cast<size_t>(i), static_cast<size_t>(m)),
                  iota_n(m, start + i), iota_n(m, -1), nullptr, nullptr, m);
    model.commit(cache, iota_n(m, 0));
  }
}

// The logits of one more token after `cache`'s rows.
std::vector<float> next_logits(LlamaModel& model, KvCache& cache, int32_t token) {
  std::vector<float> out(static_cast<size_t>(model.info().vocab_size));
  model.forward(cache, std::vector<int32_t>{token}, std::vector<int32_t>{cache.size()},
                std::vector<int32_t>{-1}, out.data());
  return out;
}

// The window blocks a cache holds (not its hole entries).
int32_t held_window_blocks(const KvCache& cache) {
  int32_t n = 0;
  for (int32_t b : cache.window_blocks()) n += b != cache.pool().hole();
  return n;
}

}  // namespace

TEST_CASE("sliding-window layers give back blocks behind the window and compute the same") {
  auto model = gpt_oss("window-pool.gguf");
  const int32_t V = model->info().vocab_size, B = LlamaModel::kKvBlockRows;
  KvPool& pool = model->kv_pool();
  REQUIRE(pool.window() != nullptr);
  CHECK(pool.window_keys() == 8);
  std::mt19937 rng(21);
  const auto tokens = random_tokens(rng, kLong + 1, V);
  const std::vector<int32_t> prompt(tokens.begin(), tokens.end() - 1);

  // One token at a time: the cache gives blocks back as it goes (a block given back too early
  // would be read as the hole and change the logits below).
  auto stepped = model->new_cache(kLong + 8);
  for (int32_t i = 0; i < kLong; ++i) {
    model->forward(*stepped, std::vector<int32_t>{prompt[i]}, std::vector<int32_t>{i},
                   std::vector<int32_t>{-1}, nullptr, nullptr, 1);
    model->commit(*stepped, std::vector<int32_t>{0});
  }
  // Every row that may be written attends no key before committed + 1 - window - slack.
  const int32_t keep_from = kLong + 1 - 8 - KvCache::kWindowSlack;
  CHECK(stepped->window_from() == keep_from / B * B);
  CHECK(held_window_blocks(*stepped) == (kLong + B - 1) / B - keep_from / B);
  CHECK(static_cast<int32_t>(stepped->blocks().size()) == (kLong + B - 1) / B);
  CHECK(pool.window()->used_blocks() == 1 + held_window_blocks(*stepped));  // and the hole

  // Chunks of 16: each block written in a pass, given back at a later commit.
  auto chunked = model->new_cache(kLong + 8);
  prefill(*model, *chunked, prompt, 0);
  CHECK(held_window_blocks(*chunked) == held_window_blocks(*stepped));
  const auto a = next_logits(*model, *stepped, tokens.back());
  const auto b = next_logits(*model, *chunked, tokens.back());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);

  // A draft's rows rolled back within the slack: as if never committed. Past it: refused,
  // naming what is missing. Back to 0, the cache takes window blocks again.
  const int32_t back = kLong - KvCache::kWindowSlack / 2;
  auto redo = model->new_cache(kLong + 8);
  prefill(*model, *redo, prompt, 0);
  redo->truncate(back);
  prefill(*model, *redo, std::span(prompt).subspan(back), back);
  const auto c = next_logits(*model, *redo, tokens.back());
  CHECK(std::memcmp(a.data(), c.data(), a.size() * 4) == 0);
  CHECK_THROWS_WITH_AS(redo->truncate(100), doctest::Contains("sliding-window layers keep rows"),
                       Error);
  CHECK(redo->size() == kLong);  // the refused truncate changed nothing
  redo->truncate(0);
  prefill(*model, *redo, prompt, 0);
  const auto d = next_logits(*model, *redo, tokens.back());
  CHECK(std::memcmp(a.data(), d.data(), a.size() * 4) == 0);

  // The boundary: a row attends 8 keys, so n may go back to window_from + 7, not one further.
  const int32_t edge = redo->window_from() + 8 - 1;
  CHECK(redo->truncate_refusal(edge).empty());
  CHECK_FALSE(redo->truncate_refusal(edge - 1).empty());

  stepped.reset();
  chunked.reset();
  redo.reset();
  CHECK(pool.window()->used_blocks() == 1);  // the hole alone
  CHECK(pool.used_blocks() == 0);
}

TEST_CASE("a published prefix pins its window blocks: adopting it computes a fresh prefill") {
  auto model = gpt_oss("window-prefix.gguf");
  const int32_t V = model->info().vocab_size, B = LlamaModel::kKvBlockRows;
  KvPool& pool = model->kv_pool();
  std::mt19937 rng(22);
  const auto tokens = random_tokens(rng, kLong + 1, V);
  const std::vector<int32_t> prompt(tokens.begin(), tokens.end() - 1);
  const int32_t full = kLong / B;  // whole blocks of the prompt

  auto a = model->new_cache(kLong + 8);
  a->set_publish_limit(kLong);
  prefill(*model, *a, prompt, 0);
  CHECK(held_window_blocks(*a) == (kLong + B - 1) / B);  // kept until published
  while (a->publish_next(prompt)) {
  }
  CHECK(a->shared_blocks() == full);
  for (int32_t i = 0; i < full; ++i) CHECK(pool.pinned_window(a->blocks()[i]) >= 0);
  // Published, its own references go behind the window; the pins keep the rows.
  CHECK(held_window_blocks(*a) < (kLong + B - 1) / B);
  const auto want = next_logits(*model, *a, tokens.back());
  a.reset();
  CHECK(pool.window()->used_blocks() == 1 + full);  // the hole and the pins

  auto b = model->new_cache(kLong + 8);
  CHECK(b->adopt_prefix(prompt, kLong) == full * B);
  prefill(*model, *b, std::span(prompt).subspan(full * B), full * B);
  const auto got = next_logits(*model, *b, tokens.back());
  CHECK(std::memcmp(want.data(), got.data(), want.size() * 4) == 0);

  // Without a publish limit, nothing waits for publication: a block whose window rows were
  // given back is not published.
  auto c = model->new_cache(kLong + 8);
  std::vector<int32_t> other = prompt;
  other[0] = (other[0] + 1) % V;
  model->forward(*c, other, iota_n(kLong, 0), iota_n(kLong, -1), nullptr, nullptr, kLong);
  model->commit(*c, iota_n(kLong, 0));
  CHECK_FALSE(c->publish_next(other));
  CHECK(c->shared_blocks() == 0);

  // Evicting the published blocks unpins their window blocks.
  b.reset();
  c.reset();
  std::vector<int32_t> taken;
  while (pool.parked_blocks() > 0) taken.push_back(pool.take());
  CHECK(pool.window()->used_blocks() == 1);
  for (int32_t t : taken) pool.release(t);
}

TEST_CASE("a tree's path past the window moves its sliding rows too (a branch that is not first)") {
  auto model = gpt_oss("window-tree.gguf");
  const int32_t V = model->info().vocab_size;
  std::mt19937 rng(23);
  const auto prompt = random_tokens(rng, kLong, V);
  const auto more = random_tokens(rng, 3, V);
  // Root, two children, the second's child: keeping the second branch moves its rows.
  auto tree = model->new_cache(kLong + 16);
  prefill(*model, *tree, prompt, 0);
  const std::vector<int32_t> tokens = {more[0], more[1], more[2], more[1]};
  const std::vector<int32_t> parents = {-1, 0, 0, 2};
  const std::vector<int32_t> positions = {kLong, kLong + 1, kLong + 1, kLong + 2};
  std::vector<float> logits(4 * static_cast<size_t>(V));
  model->forward(*tree, tokens, positions, parents, logits.data());
  model->commit(*tree, std::vector<int32_t>{0, 2, 3});
  auto chain = model->new_cache(kLong + 16);
  std::vector<int32_t> whole = prompt;
  whole.insert(whole.end(), {more[0], more[2], more[1]});
  prefill(*model, *chain, whole, 0);
  // Enough rows later that every row the check attends was written by the commit's moves.
  for (int32_t i = 0; i < 4; ++i) {
    const auto a = next_logits(*model, *tree, more[i % 3]);
    const auto b = next_logits(*model, *chain, more[i % 3]);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
    model->commit(*tree, std::vector<int32_t>{0});
    model->commit(*chain, std::vector<int32_t>{0});
  }
}

TEST_CASE("cached prefixes' window rows are evicted before the window pool grows") {
  auto model = gpt_oss("window-evict.gguf");
  const int32_t V = model->info().vocab_size, B = LlamaModel::kKvBlockRows;
  KvPool& pool = model->kv_pool();
  std::mt19937 rng(24);
  const auto prompt = random_tokens(rng, kLong, V);
  {
    auto a = model->new_cache(kLong + 8);
    a->set_publish_limit(kLong);
    prefill(*model, *a, prompt, 0);
    while (a->publish_next(prompt)) {
    }
    // Another cache adopts the prefix; a cut far back into it is refused (its window rows
    // went), one to 0 lets every block go. A shorter prefix adopted then holds its pinned
    // window blocks and computes what a fresh prefill does.
    auto b = model->new_cache(kLong + 8);
    CHECK(b->adopt_prefix(prompt, kLong) == kLong / B * B);
    CHECK_FALSE(b->truncate_refusal(3 * B).empty());
    b->truncate(0);
    CHECK(b->blocks().empty());
    CHECK(b->window_blocks().empty());
    CHECK(b->adopt_prefix(prompt, 3 * B + 5) == 3 * B);
    CHECK(held_window_blocks(*b) == 3);
    prefill(*model, *b, std::span(prompt).subspan(3 * B, 5), 3 * B);
    const auto want = next_logits(*model, *b, prompt[3 * B + 5]);
    auto fresh = model->new_cache(kLong + 8);
    prefill(*model, *fresh, std::span(prompt).first(3 * B + 5), 0);
    const auto got = next_logits(*model, *fresh, prompt[3 * B + 5]);
    CHECK(std::memcmp(want.data(), got.data(), want.size() * 4) == 0);
  }
  REQUIRE(pool.parked_blocks() == kLong / B);
  const int32_t blocks = pool.window()->blocks();
  std::vector<int32_t> taken;
  while (pool.window()->free_blocks() > 0) taken.push_back(pool.take_window());
  const uint64_t evictions = pool.evictions();
  taken.push_back(pool.take_window());
  CHECK(pool.evictions() > evictions);
  CHECK(pool.window()->blocks() == blocks);  // a pin freed, not the pool grown
  for (int32_t t : taken) pool.window()->release(t);
}
