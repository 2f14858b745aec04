// A hybrid model (qwen35: gated DeltaNet layers with recurrent state, gated attention) through
// LlamaModel: verifying rows and committing any accepted path leaves exactly the state that
// decoding the path one token at a time leaves (the next step's logits are the same bits), in
// chains, trees and batches of several sequences; what a recurrent state cannot do is refused.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../backend/backend_test_util.hpp"
#include "common/error.hpp"
#include "model_runs.hpp"
#include "models/llama_model.hpp"
#include "random_llama.hpp"
#include "writers/gguf_writer.hpp"
#include "writers/llama_writer.hpp"

using namespace specd;
using namespace specd::test;

namespace {

// A qwen35 (or qwen35moe: 4 experts of 32, 2 per token, a shared expert of 64) model.
std::string hybrid_file(GgmlType type = GgmlType::kF16, uint32_t n_nextn = 0,
                        const std::string& architecture = "qwen35") {
  RandomLlamaSpec s;
  s.architecture = architecture;
  s.n_expert = 4;
  s.n_expert_used = 2;
  s.n_ff_exp = 32;
  s.n_ff_shared = 64;
  s.n_layer = 4;  // three gated DeltaNet layers, then gated attention
  s.head_dim = 16;
  s.rope_dim = 8;
  s.n_nextn = n_nextn;
  s.weight_type = type;
  s.weight_scale = 0.15f;
  s.seed = 35;
  const std::string path = temp_dir("hybrid") + "/" + architecture + "-" +
                           std::to_string(int(type)) + "-" + std::to_string(n_nextn) + ".gguf";
  write_random_llama(path, s);
  return path;
}

std::vector<int32_t> iota(int32_t n, int32_t start) {
  std::vector<int32_t> v(n);
  for (int32_t i = 0; i < n; ++i) v[i] = start + i;
  return v;
}

// Token ids from 2 up.
std::vector<int32_t> tokens(std::mt19937& rng, int32_t n, int32_t vocab) {
  return random_tokens(rng, n, vocab, 2);
}

// Runs `toks` as a chain after the cache's committed rows, commits them all, returns the last
// row's logits.
std::vector<float> run_chain(LlamaModel& model, KvCache& cache, const std::vector<int32_t>& toks) {
  const int32_t n = static_cast<int32_t>(toks.size()), V = model.info().vocab_size;
  std::vector<float> logits(static_cast<size_t>(V));
  model.forward(cache, toks, iota(n, cache.size()), iota(n, -1), logits.data(), nullptr, n - 1);
  model.commit(cache, iota(n, 0));
  return logits;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

}  // namespace

TEST_CASE("a hybrid model loads as llama.cpp lays qwen35 out") {
  auto model = LlamaModel::load(hybrid_file(), two_thread_cpu_device());
  const ModelInfo& in = model->info();
  CHECK(in.architecture == "qwen35");
  REQUIRE(in.hybrid());
  CHECK(in.recurrent == std::vector<bool>{true, true, true, false});
  CHECK(in.ssm_value_heads == 4);
  CHECK(in.ssm_key_heads == 2);
  CHECK(in.n_rot == 8);
}

TEST_CASE(
    "a hybrid model's verified chain, committed at any length, leaves the state that "
    "decoding it one token at a time leaves") {
  for (const std::string arch : {"qwen35", "qwen35moe"})
    for (GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0}) {
      CAPTURE(arch);
      auto model = LlamaModel::load(hybrid_file(type, 0, arch), two_thread_cpu_device());
      const int32_t V = model->info().vocab_size;
      std::mt19937 rng(7);
      const auto prompt = tokens(rng, 9, V);
      const auto draft = tokens(rng, 6, V);
      const int32_t next = tokens(rng, 1, V)[0];
      for (int32_t kept = 1; kept <= 6; ++kept) {
        CAPTURE(kept);
        // Verify all six rows, keep the first `kept`, then one more token.
        auto spec = model->new_cache(64);
        run_chain(*model, *spec, prompt);
        std::vector<float> rows(static_cast<size_t>(6) * V);
        model->forward(*spec, draft, iota(6, spec->size()), iota(6, -1), rows.data());
        model->commit(*spec, iota(kept, 0));
        const auto after = run_chain(*model, *spec, {next});
        // The same tokens one at a time.
        auto plain = model->new_cache(64);
        run_chain(*model, *plain, prompt);
        for (int32_t i = 0; i < kept; ++i) {
          const auto one = run_chain(*model, *plain, {draft[i]});
          CHECK(std::memcmp(one.data(), rows.data() + static_cast<size_t>(i) * V, V * 4) == 0);
        }
        CHECK(same_bits(run_chain(*model, *plain, {next}), after));
      }
    }
}

TEST_CASE("a hybrid model's draft tree: every node's logits and any committed path are exact") {
  for (const std::string arch : {"qwen35", "qwen35moe"}) {
    CAPTURE(arch);
    auto model = LlamaModel::load(hybrid_file(GgmlType::kF16, 0, arch), two_thread_cpu_device());
    const int32_t V = model->info().vocab_size;
    std::mt19937 rng(8);
    const auto prompt = tokens(rng, 5, V);
    //        0
    //      /   \      (rows; 0 is the root)
    //     1     2
    //    / \    |
    //   3   4   5
    const std::vector<int32_t> parents = {-1, 0, 0, 1, 1, 2};
    const auto toks = tokens(rng, 6, V);
    std::vector<int32_t> positions;
    for (int32_t p : parents) positions.push_back(p < 0 ? 5 : positions[p] + 1);
    for (const std::vector<int32_t>& path :
         std::vector<std::vector<int32_t>>{{0, 1, 4}, {0, 2, 5}, {0, 2}}) {
      CAPTURE(path.back());
      auto spec = model->new_cache(64);
      run_chain(*model, *spec, prompt);
      std::vector<float> rows(static_cast<size_t>(6) * V);
      model->forward(*spec, toks, positions, parents, rows.data());
      model->commit(*spec, path);
      auto plain = model->new_cache(64);
      run_chain(*model, *plain, prompt);
      for (int32_t r : path) {
        const auto one = run_chain(*model, *plain, {toks[r]});
        CHECK(std::memcmp(one.data(), rows.data() + static_cast<size_t>(r) * V, V * 4) == 0);
      }
      CHECK(same_bits(run_chain(*model, *plain, {7}), run_chain(*model, *spec, {7})));
    }
  }
}

TEST_CASE("a hybrid model's rows in a batch of sequences equal each sequence alone") {
  for (const std::string arch : {"qwen35", "qwen35moe"}) {
    CAPTURE(arch);
    auto model = LlamaModel::load(hybrid_file(GgmlType::kQ8_0, 0, arch), two_thread_cpu_device());
    const int32_t V = model->info().vocab_size;
    std::mt19937 rng(9);
    struct Seq {
      std::vector<int32_t> prompt, draft, positions, parents;
      std::unique_ptr<KvCache> cache;
      std::vector<float> logits, alone, alone_next;
    };
    std::vector<Seq> seqs(4);
    for (size_t s = 0; s < seqs.size(); ++s) {
      Seq& q = seqs[s];
      q.prompt = tokens(rng, 3 + 4 * static_cast<int32_t>(s), V);
      q.draft = tokens(rng, 1 + static_cast<int32_t>(s), V);
      const int32_t m = static_cast<int32_t>(q.draft.size());
      // Alone: its rows, then half of them committed and one more token.
      auto alone = model->new_cache(64);
      run_chain(*model, *alone, q.prompt);
      q.alone.resize(static_cast<size_t>(m) * V);
      model->forward(*alone, q.draft, iota(m, alone->size()), iota(m, -1), q.alone.data());
      model->commit(*alone, iota((m + 1) / 2, 0));
      q.alone_next = run_chain(*model, *alone, {5});
      q.cache = model->new_cache(64);
      run_chain(*model, *q.cache, q.prompt);
      q.logits.resize(q.alone.size());
      q.positions = iota(m, q.cache->size());
      q.parents = iota(m, -1);
    }
    // Together: one pass, then each commits half of its rows (before the next pass).
    std::vector<ForwardEntry> entries;
    for (Seq& q : seqs) {
      ForwardEntry e;
      e.cache = q.cache.get();
      e.tokens = q.draft;
      e.positions = q.positions;
      e.parents = q.parents;
      e.logits = q.logits.data();
      entries.push_back(e);
    }
    model->forward_batch(entries);
    for (Seq& q : seqs)
      model->commit(*q.cache, iota((static_cast<int32_t>(q.draft.size()) + 1) / 2, 0));
    for (size_t s = 0; s < seqs.size(); ++s) {
      CAPTURE(s);
      CHECK(same_bits(seqs[s].logits, seqs[s].alone));
      CHECK(same_bits(run_chain(*model, *seqs[s].cache, {5}), seqs[s].alone_next));
    }
  }
}

TEST_CASE("a commit that needs a replay after a later pass is refused, naming the rule") {
  auto model = LlamaModel::load(hybrid_file(), two_thread_cpu_device());
  if (model->kv_pool().recurrent()->restore() != RecurrentRestore::kReplay) return;
  const int32_t V = model->info().vocab_size;
  std::mt19937 rng(12);
  auto a = model->new_cache(64), b = model->new_cache(64);
  run_chain(*model, *a, tokens(rng, 4, V));
  const auto draft = tokens(rng, 3, V);
  std::vector<float> logits(3 * static_cast<size_t>(V));
  model->forward(*a, draft, iota(3, 4), iota(3, -1), logits.data());
  run_chain(*model, *b, tokens(rng, 4, V));  // a pass that stores no rows leaves them
  model->forward(*b, draft, iota(3, 4), iota(3, -1), logits.data());  // one that does
  try {
    model->commit(*a, iota(2, 0));
    FAIL("replayed rows a later pass replaced");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("commit each pass's rows before the next pass") !=
          std::string::npos);
  }
  model->commit(*a, iota(3, 0));  // the whole chain needs no replay
  CHECK(a->size() == 7);
}

TEST_CASE("a recurrent state cannot go back: truncation, prefix sharing and commits it refuses") {
  auto model = LlamaModel::load(hybrid_file(), two_thread_cpu_device());
  const int32_t V = model->info().vocab_size;
  std::mt19937 rng(10);
  auto cache = model->new_cache(64);
  const auto prompt = tokens(rng, 20, V);
  run_chain(*model, *cache, prompt);
  try {
    model->truncate(*cache, 10);
    FAIL("truncated a recurrent state");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("cannot go back to row 10") != std::string::npos);
  }
  model->truncate(*cache, 20);  // keeps every row: nothing to undo
  CHECK(cache->size() == 20);
  CHECK(!cache->publish_next(prompt));
  auto other = model->new_cache(64);
  CHECK(other->adopt_prefix(prompt, 20) == 0);
  // A prefill keeps the state of its last row only: a commit ending before it is refused.
  const auto more = tokens(rng, 4, V);
  model->forward(*cache, more, iota(4, 20), iota(4, -1), nullptr, nullptr, 4);
  try {
    model->commit(*cache, iota(2, 0));
    FAIL("committed a path whose state the pass did not keep");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("kept no recurrent state at row 1") != std::string::npos);
  }
  model->truncate(*cache, 0);  // back to the empty state
  auto fresh = model->new_cache(64);
  CHECK(same_bits(run_chain(*model, *cache, prompt), run_chain(*model, *fresh, prompt)));
}

TEST_CASE("a hybrid model file with MTP layers loads its trunk; the slots are given back") {
  auto model = LlamaModel::load(hybrid_file(GgmlType::kF16, 1), two_thread_cpu_device());
  CHECK(model->info().n_layer == 4);
  CHECK(model->info().n_nextn == 1);
  {
    auto cache = model->new_cache(64);
    run_chain(*model, *cache, {3, 4, 5});
    CHECK(model->kv_pool().recurrent()->used_slots() == 1);
  }
  CHECK(model->kv_pool().recurrent()->used_slots() == 0);
}

namespace {

// A qwen35 file and a qwen35moe file of the same trunk whose FFN computes the dense one's:
// with `through_shared`, routed experts whose down matrices are zero and a shared expert that
// is the dense FFN with its down matrix doubled, behind a gate of 0 (sigmoid 0.5); else
// experts that are each the dense FFN (weights summing to 1) and a shared expert whose down
// matrix is zero. f32 weights: doubling is exact. The qwen35moe file has no
// feed_forward_length, as llama.cpp's converter writes it.
std::pair<std::string, std::string> same_ffn_files(bool through_shared) {
  LlamaLayout dense;
  dense.architecture = "qwen35";
  dense.n_layer = 4;
  dense.head_dim = 16;
  dense.rope_dim = 8;
  LlamaLayout moe = dense;
  moe.architecture = "qwen35moe";
  moe.n_expert = 4;
  moe.n_expert_used = 2;
  moe.n_ff_exp = moe.n_ff_shared = dense.n_ff;
  std::mt19937 rng(36);
  std::normal_distribution<float> normal(0.0f, 0.15f);
  std::map<std::string, std::vector<float>> values;
  const std::string dir = temp_dir("hybrid-moe");
  auto write = [&](const LlamaLayout& l, const std::string& path) {
    GgufWriter w;
    set_llama_metadata(w, l);
    set_byte_tokenizer(w, l.vocab);
    for (const LlamaTensor& t : llama_tensors(l)) {
      size_t n = 1;
      for (int64_t e : t.ne) n *= static_cast<size_t>(e);
      const std::string blk = t.name.substr(0, t.name.find('.', 4) + 1);  // "blk.N."
      auto dense_of = [&](const char* name) { return values.at(blk + name); };
      std::vector<float> v;
      if (values.count(t.name)) {
        v = values.at(t.name);
      } else if (t.name.find("_exps.") != std::string::npos) {  // E copies of the dense FFN's
        const std::string name = t.name.find("gate") != std::string::npos  ? "ffn_gate.weight"
                                 : t.name.find("up_") != std::string::npos ? "ffn_up.weight"
                                                                           : "ffn_down.weight";
        const std::vector<float> one = dense_of(name.c_str());
        const bool zero = through_shared && name == "ffn_down.weight";
        for (uint32_t e = 0; e < l.n_expert; ++e)
          for (float x : one) v.push_back(zero ? 0.0f : x);
      } else if (t.name.find("_shexp.") != std::string::npos &&
                 t.name.find("gate_inp") == std::string::npos) {
        const bool down = t.name.find("down") != std::string::npos;
        v = dense_of(down                                       ? "ffn_down.weight"
                     : t.name.find("gate") != std::string::npos ? "ffn_gate.weight"
                                                                : "ffn_up.weight");
        if (down)
          for (float& x : v) x = through_shared ? 2 * x : 0.0f;
      } else if (t.name.find("gate_inp_shexp") != std::string::npos) {
        v.assign(n, 0.0f);
      } else {
        v.resize(n);
        const bool norm = t.role == LlamaTensorRole::kNorm;
        for (float& x : v) x = (norm ? 1.0f : 0.0f) + normal(rng);
        if (t.role == LlamaTensorRole::kConv)
          for (float& x : v) x = 0.5f * std::tanh(x);
        if (t.role == LlamaTensorRole::kDecay)
          for (float& x : v) x = -1.0f - std::abs(x);
        values[t.name] = v;
      }
      REQUIRE(v.size() == n);
      w.add_tensor_f32(t.name, GgmlType::kF32, t.ne, v.data());
    }
    w.write(path);
    return path;
  };
  const std::string tag = through_shared ? "-shared" : "-routed";
  const std::string dense_path = write(dense, dir + "/dense" + tag + ".gguf");
  return {dense_path, write(moe, dir + "/moe" + tag + ".gguf")};
}

}  // namespace

TEST_CASE("qwen35moe's routed and shared experts compute what the dense FFN they copy does") {
  for (bool through_shared : {false, true}) {
    CAPTURE(through_shared);
    const auto [dense_path, moe_path] = same_ffn_files(through_shared);
    auto dense = LlamaModel::load(dense_path, two_thread_cpu_device());
    auto moe = LlamaModel::load(moe_path, two_thread_cpu_device());
    CHECK(moe->info().n_expert == 4);
    CHECK(moe->info().n_ff_shared == 128);
    std::mt19937 rng(37);
    const auto prompt = tokens(rng, 12, dense->info().vocab_size);
    auto a = dense->new_cache(64), b = moe->new_cache(64);
    const auto want = run_chain(*dense, *a, prompt), got = run_chain(*moe, *b, prompt);
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, double(std::abs(want[i] - got[i])));
    MESSAGE("max |qwen35moe - qwen35| over the last row's logits: " << worst);
    // Through the shared expert the same ops run on the same values, doubled and halved.
    CHECK(worst <= (through_shared ? 0.0 : 1e-4));
    CHECK_FALSE(GgufFile::open(moe_path).has("qwen35moe.feed_forward_length"));
  }
}
