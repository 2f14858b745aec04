// The engine end to end: plain decoding, speculative decoding with every proposer at
// temperature 0 (token-for-token equal to plain decoding), stop conditions cut inside
// accepted runs exactly where plain decoding stops.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "audit/config_audit.hpp"
#include "audit/distribution_tests.hpp"
#include "bench/shuffled_vocabulary.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "engine_config.hpp"
#include "gguf/gguf_reader.hpp"
#include "grammar/grammar_matcher.hpp"
#include "grammar/json_schema_grammar.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace specd;

namespace {

const std::vector<std::string>& kPrompts = test::kEnginePrompts;

struct Fixture {
  std::string dir = test::temp_dir("engine");
  PluginRegistry registry{{SPECD_TEST_PLUGINS}};

  // Writes a random model under `file_name` in this test's folder and returns its path.
  std::string random_model(const std::string& file_name, const test::RandomLlamaSpec& spec) {
    const std::string path = dir + "/" + file_name;
    test::write_random_llama(path, spec);
    return path;
  }
  std::string random_model(const std::string& file_name, uint64_t seed) {
    test::RandomLlamaSpec spec;
    spec.seed = seed;
    return random_model(file_name, spec);
  }
};

std::vector<std::string> concat(std::vector<std::string> head,
                                const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

const std::vector<std::string> kGreedyNgram = {"proposer.kind=ngram", "proposer.k=5",
                                               "acceptance.rule=greedy"};

// An oracle drafting plain decoding's output `base` (cut at random depths), chain or tree,
// under the exact-match rule.
std::vector<std::string> oracle_replaying(const GenerationResult& base, size_t prompt_length,
                                          bool tree) {
  return {"proposer.kind=oracle",
          "proposer.k=6",
          "proposer.oracle=\"" + test::join_ids(base.tokens) + "\"",
          "proposer.prompt_length=" + std::to_string(prompt_length),
          std::string("proposer.tree=") + (tree ? "true" : "false"),
          "acceptance.rule=exact-match"};
}

// A small random qwen35: gated DeltaNet layers, a gated attention layer, an MTP layer.
test::RandomLlamaSpec random_qwen35_spec(uint32_t head_dim, uint64_t seed) {
  test::RandomLlamaSpec spec;
  spec.architecture = "qwen35";
  spec.n_layer = 4;
  spec.head_dim = head_dim;
  spec.rope_dim = 8;
  spec.n_nextn = 1;
  spec.weight_scale = 0.15f;
  spec.seed = seed;
  return spec;
}

// The oracle replaying `base` as chains and as trees gives `base` back, accepting some drafts;
// `more_checks` sees each output. `configured` turns proposer overrides into the test's config.
template <class Configured, class MoreChecks>
void check_oracle_replays_plain(const Configured& configured, const PluginRegistry& registry,
                                const std::string& prompt, const GenerationResult& base,
                                size_t prompt_length, const MoreChecks& more_checks) {
  for (bool tree : {false, true}) {
    CAPTURE(tree);
    Engine oracle(configured(oracle_replaying(base, prompt_length, tree)), registry);
    const GenerationResult out = oracle.generate(prompt);
    CHECK(test::join_ids(out.tokens) == test::join_ids(base.tokens));
    CHECK(out.stats.accepted > 0);
    more_checks(out);
  }
}

}  // namespace

TEST_CASE("greedy speculative output equals plain greedy output, every proposer and weight type") {
  Fixture f;
  const std::pair<GgmlType, const char*> types[] = {{GgmlType::kF32, "f32"},
                                                    {GgmlType::kF16, "f16"},
                                                    {GgmlType::kBF16, "bf16"},
                                                    {GgmlType::kQ8_0, "q8_0"}};
  for (auto [type, type_name] : types) {
    test::RandomLlamaSpec spec;
    spec.weight_type = type;
    spec.seed = 11 + static_cast<uint64_t>(type);
    spec.tied_output = type == GgmlType::kQ8_0;
    const std::string model = f.random_model(std::string("random-") + type_name + ".gguf", spec);
    const auto configured = [&](const std::vector<std::string>& proposer) {
      return test::greedy_config(model, concat({"sampling.max_tokens=40"}, proposer));
    };
    Engine plain(configured({}), f.registry);
    for (const std::string& prompt : kPrompts) {
      CAPTURE(type_name);
      CAPTURE(prompt);
      GenerationResult base = plain.generate(prompt);
      REQUIRE(base.tokens.size() == 40);
      CHECK(base.stats.rounds == 40);

      Engine ngram(configured(kGreedyNgram), f.registry);
      GenerationResult spec_out = ngram.generate(prompt);
      CHECK(test::join_ids(spec_out.tokens) == test::join_ids(base.tokens));
      CHECK(spec_out.text == base.text);

      const size_t prompt_length = plain.tokenizer().encode(prompt).size();
      check_oracle_replays_plain(configured, f.registry, prompt, base, prompt_length,
                                 [&](const GenerationResult& out) {
                                   // Rounds accept different lengths, so the KV cache was
                                   // compacted at many positions.
                                   CHECK(out.stats.rounds < base.stats.rounds);
                                   CHECK(out.stats.accepted < out.stats.drafted);
                                 });
    }
  }
}

TEST_CASE("greedy speculative output equals plain greedy output with f16 and q8_0 KV caches") {
  // Within each cache type: its speculative output equals its own plain output (the rows a
  // round writes and commits, tree branches moved included, are the rows plain decoding
  // writes, whatever their encoding). Types change the logits, so they are compared with
  // themselves only.
  Fixture f;
  test::RandomLlamaSpec spec;
  spec.weight_type = GgmlType::kF16;
  spec.seed = 23;
  spec.n_embd = 128;  // head_dim 32: a q8_0 row holds whole blocks of 32
  const std::string model = f.random_model("random-kv.gguf", spec);
  for (const char* kv : {"f16", "q8_0"}) {
    CAPTURE(kv);
    const std::string type = std::string("engine.kv_type=\"") + kv + "\"";
    Engine plain(test::greedy_config(model, {"sampling.max_tokens=40", type}), f.registry);
    Engine f32(test::greedy_config(model, {"sampling.max_tokens=40"}), f.registry);
    bool differs_from_f32 = false;
    for (const std::string& prompt : kPrompts) {
      CAPTURE(prompt);
      const GenerationResult base = plain.generate(prompt);
      differs_from_f32 = differs_from_f32 || base.tokens != f32.generate(prompt).tokens;
      const auto configured = [&](const std::vector<std::string>& proposer) {
        return test::greedy_config(model,
                                   concat(concat({"sampling.max_tokens=40"}, proposer), {type}));
      };
      Engine ngram(configured(kGreedyNgram), f.registry);
      CHECK(test::join_ids(ngram.generate(prompt).tokens) == test::join_ids(base.tokens));
      const size_t prompt_length = plain.tokenizer().encode(prompt).size();
      Engine oracle(configured(oracle_replaying(base, prompt_length, /*tree=*/true)), f.registry);
      const GenerationResult out = oracle.generate(prompt);
      CHECK(test::join_ids(out.tokens) == test::join_ids(base.tokens));
      CHECK(out.stats.accepted > 0);
    }
    // The type took effect: on six prompts of 40 tokens its greedy text departs from f32's
    // somewhere (q8_0 certainly; f16 rounds the random model's rows less).
    if (std::string(kv) == "q8_0") CHECK(differs_from_f32);
  }
}

TEST_CASE(
    "presence/frequency/repeat penalties and logit_bias: greedy speculative output equals plain") {
  // Each verified row is penalised by its own path (the committed output and its draft
  // ancestors), so chains, trees and lookup drafts all give plain decoding's tokens.
  Fixture f;
  const std::string model = f.random_model("random-penalties.gguf", 29);
  const std::vector<std::string> penalties = {
      "sampling.max_tokens=40", "sampling.presence_penalty=0.9", "sampling.frequency_penalty=0.7",
      "sampling.repeat_penalty=1.3", "sampling.repeat_last_n=16"};
  const auto configured = [&](const std::vector<std::string>& proposer) {
    Config c = test::greedy_config(model, concat(penalties, proposer));
    c.sampling.logit_bias = {{7, -100.f}, {11, 4.f}};
    return c;
  };
  Engine plain(configured({}), f.registry);
  Engine unpenalised(test::greedy_config(model, {"sampling.max_tokens=40"}), f.registry);
  size_t differ = 0;
  for (const std::string& prompt : kPrompts) {
    CAPTURE(prompt);
    const GenerationResult base = plain.generate(prompt);
    REQUIRE(base.tokens.size() == 40);
    CHECK(std::count(base.tokens.begin(), base.tokens.end(), 7) == 0);  // biased out
    differ += test::join_ids(unpenalised.generate(prompt).tokens) != test::join_ids(base.tokens);

    Engine ngram(configured(kGreedyNgram), f.registry);
    CHECK(test::join_ids(ngram.generate(prompt).tokens) == test::join_ids(base.tokens));

    // Accepted drafts: rows deep in the drafts were penalised and accepted.
    const size_t prompt_length = plain.tokenizer().encode(prompt).size();
    check_oracle_replays_plain(configured, f.registry, prompt, base, prompt_length,
                               [](const GenerationResult&) {});
  }
  CHECK(differ > 0);  // the penalties changed what plain decoding says
}

TEST_CASE("min_tokens: each verified row bars the end of sequence by its own position") {
  // The end of sequence pushed to the top: plain decoding ends right after min_tokens. An
  // oracle drafting that output (cut at a random depth, under many seeds) has rounds whose
  // accepted rows straddle the boundary, so a row masked by its round's start instead of
  // its own depth would show.
  Fixture f;
  const std::string model = f.random_model("random-min-tokens.gguf", 31);
  auto configured = [&](std::vector<std::string> overrides) {
    overrides.push_back("sampling.max_tokens=16");
    Config c = test::greedy_config(model, overrides);
    c.sampling.ignore_eos = false;
    c.sampling.min_tokens = 6;
    return c;
  };
  Config plain_c = configured({});
  Engine probe(plain_c, f.registry);
  const int32_t eos = probe.tokenizer().eos_id();
  REQUIRE(eos >= 0);
  plain_c.sampling.logit_bias = {{eos, 100.f}};
  Engine plain(plain_c, f.registry);
  for (const std::string& prompt : kPrompts) {
    CAPTURE(prompt);
    const GenerationResult base = plain.generate(prompt);
    REQUIRE(base.tokens.size() == 6);
    CHECK(base.stop_reason == "eos");
    uint64_t accepted = 0;
    for (int seed = 1; seed <= 8; ++seed) {
      CAPTURE(seed);
      Config oracle_c = configured(
          {"proposer.kind=oracle", "proposer.k=8", "proposer.seed=" + std::to_string(seed),
           "proposer.oracle=\"" + test::join_ids(base.tokens) + "\"",
           "proposer.prompt_length=" + std::to_string(plain.tokenizer().encode(prompt).size()),
           "acceptance.rule=exact-match"});
      oracle_c.sampling.logit_bias = plain_c.sampling.logit_bias;
      const GenerationResult out = Engine(oracle_c, f.registry).generate(prompt);
      CHECK(test::join_ids(out.tokens) == test::join_ids(base.tokens));
      CHECK(out.stop_reason == "eos");
      accepted += out.stats.accepted;
    }
    CHECK(accepted > 8);
  }
}

TEST_CASE("grammar: greedy speculative output equals plain, and it matches the grammar") {
  // Each verified row is masked by the grammar's state after its own path, so chains, trees
  // and lookup drafts all give plain decoding's tokens; the draft knows nothing of the
  // grammar and is simply rejected where it leaves it.
  Fixture f;
  const std::string model = f.random_model("random-grammar.gguf", 31);
  const std::string gbnf = json_object_gbnf();
  const auto config = [&](std::vector<std::string> o) {
    o.insert(o.end(), {"sampling.max_tokens=40", "sampling.ignore_eos=false"});
    Config c = test::greedy_config(model, o);
    c.sampling.grammar = gbnf;
    return c;
  };
  const Grammar grammar = parse_gbnf(gbnf);
  Engine plain(config({}), f.registry);
  Engine free(test::greedy_config(model, {"sampling.max_tokens=40"}), f.registry);
  for (const std::string& prompt : kPrompts) {
    CAPTURE(prompt);
    const GenerationResult base = plain.generate(prompt);
    REQUIRE(!base.tokens.empty());
    GrammarMatcher m(grammar);
    GrammarState state = m.initial();
    CHECK(m.advance(state, base.text));
    if (base.stop_reason == "eos") CHECK(GrammarMatcher::can_end(state));
    CHECK(base.text[0] == '{');
    CHECK(free.generate(prompt).text != base.text);  // the grammar changed the output

    Engine ngram(config(kGreedyNgram), f.registry);
    CHECK(test::join_ids(ngram.generate(prompt).tokens) == test::join_ids(base.tokens));
    // The target as its own draft: the draft model masks its rows with the grammar too
    // (ABI 0.6 token filter), so every drafted token is the target's and all are accepted.
    // Unmasked, it would draft the free text and be refused at the first brace.
    Engine self_draft(config({"proposer.kind=draft-model", "proposer.model=\"" + model + "\"",
                              "proposer.k=4", "acceptance.rule=rejection"}),
                      f.registry);
    const GenerationResult drafted = self_draft.generate(prompt);
    CHECK(test::join_ids(drafted.tokens) == test::join_ids(base.tokens));
    CHECK(drafted.stats.drafted > 0);
    CHECK(drafted.stats.accepted == drafted.stats.drafted);
    const size_t prompt_length = plain.tokenizer().encode(prompt).size();
    check_oracle_replays_plain(config, f.registry, prompt, base, prompt_length,
                               [](const GenerationResult&) {});
  }
  Config with_eos_ignored = config({});
  with_eos_ignored.sampling.ignore_eos = true;
  CHECK_THROWS_WITH_AS(Engine(with_eos_ignored, f.registry).generate("x"),
                       doctest::Contains("ignore_eos cannot be combined with a grammar"),
                       UsageError);
}

TEST_CASE("grammar at temperature 1: speculative sampling draws plain decoding's distribution") {
  // Two letters, a-d then e-h, under the grammar: 16 outcomes, plain against the exact rule with
  // a draft model that ignores the grammar (most of its tokens are masked out of the target's
  // rows and refused; the letters it does draft are accepted with the masked ratio).
  Fixture f;
  test::RandomLlamaSpec spec;
  spec.seed = 37;
  const std::string model = f.random_model("random-grammar-t1.gguf", spec);
  const auto config = [&](std::vector<std::string> o) {
    o.insert(o.end(),
             {"sampling.max_tokens=3", "sampling.ignore_eos=false", "sampling.temperature=1"});
    Config c = test::greedy_config(model, o);
    c.sampling.grammar = "root ::= [a-d] [e-h]";
    return c;
  };
  Engine plain(config({}), f.registry);
  // A draft model that knows nothing of the grammar: another random model.
  test::RandomLlamaSpec draft_spec = spec;
  draft_spec.seed = 38;
  const std::string draft = f.random_model("random-grammar-draft.gguf", draft_spec);
  // The same draft, and its copy in a shuffled vocabulary drafting through the intersection
  // (its draws masked by the grammar mapped onto its own ids).
  const std::string shuffled = f.dir + "/random-grammar-draft-shuffled.gguf";
  bench::write_shuffled_vocabulary(draft, shuffled, 4);
  for (const std::vector<std::string>& drafting :
       {std::vector<std::string>{"proposer.model=\"" + draft + "\""},
        std::vector<std::string>{"proposer.model=\"" + shuffled + "\"",
                                 "proposer.vocabulary=\"intersection\""}}) {
    CAPTURE(drafting.back());
    std::vector<std::string> o = {"proposer.kind=draft-model", "proposer.k=2",
                                  "acceptance.rule=rejection"};
    o.insert(o.end(), drafting.begin(), drafting.end());
    Engine speculative(config(o), f.registry);
    const int n = 1500;
    std::map<std::string, std::pair<double, double>> counts;
    uint64_t accepted = 0;
    for (int i = 0; i < n; ++i) {
      plain.reseed(1000 + static_cast<uint64_t>(i));
      speculative.reseed(900000 + static_cast<uint64_t>(i));
      const GenerationResult a = plain.generate("x");
      const GenerationResult b = speculative.generate("x");
      for (const std::string& text : {a.text, b.text}) {
        REQUIRE(text.size() == 2);
        CHECK((text[0] >= 'a' && text[0] <= 'd' && text[1] >= 'e' && text[1] <= 'h'));
      }
      counts[a.text].first += 1;
      counts[b.text].second += 1;
      accepted += b.stats.accepted;
    }
    // Two-sample chi-square test of homogeneity.
    double x2 = 0;
    for (const auto& [text, c] : counts) {
      const double expected = (c.first + c.second) / 2;
      x2 += (c.first - expected) * (c.first - expected) / expected +
            (c.second - expected) * (c.second - expected) / expected;
    }
    const double p = chi2_survival(x2, static_cast<double>(counts.size() - 1));
    MESSAGE("outcomes " << counts.size() << ", chi2 " << x2 << ", p " << p << ", accepted "
                        << accepted);
    CHECK(counts.size() <= 16);
    CHECK(counts.size() >= 8);
    CHECK(accepted > 0);
    CHECK(p > 1e-4);
  }
}

TEST_CASE("stop strings and max tokens cut inside accepted runs exactly as plain decoding") {
  Fixture f;
  const std::string model = f.random_model("stop.gguf", 5);
  Engine plain(test::greedy_config(model, {"sampling.max_tokens=30"}), f.registry);
  GenerationResult base = plain.generate("hello");
  REQUIRE(base.text.size() > 6);
  // A stop string taken from the middle of the plain output.
  std::string stop = base.text.substr(base.text.size() / 2, 2);
  std::string expected = base.text.substr(0, base.text.find(stop));
  std::string stop_toml = "sampling.stop=[\"";
  for (unsigned char c : stop) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", c);
    stop_toml += buf;
  }
  stop_toml += "\"]";
  size_t prompt_length = plain.tokenizer().encode("hello").size();
  for (int max_tokens : {1, 7, 13, 30}) {
    CAPTURE(max_tokens);
    std::vector<std::string> common = {"sampling.max_tokens=" + std::to_string(max_tokens)};
    Engine p2(test::greedy_config(model, common), f.registry);
    auto o = common;
    o.insert(o.end(), {"proposer.kind=oracle", "proposer.k=8",
                       "proposer.oracle=\"" + test::join_ids(base.tokens) + "\"",
                       "proposer.prompt_length=" + std::to_string(prompt_length)});
    Engine s2(test::greedy_config(model, o), f.registry);
    GenerationResult a = p2.generate("hello"), b = s2.generate("hello");
    CHECK(a.tokens.size() == static_cast<size_t>(max_tokens));
    CHECK(test::join_ids(a.tokens) == test::join_ids(b.tokens));
    CHECK(a.stop_reason == "length");
    CHECK(b.stop_reason == "length");
  }
  if (stop.find('\0') == std::string::npos && (stop[0] & 0x80) == 0 && (stop[1] & 0x80) == 0) {
    Engine p3(test::greedy_config(model, {"sampling.max_tokens=30", stop_toml}), f.registry);
    Engine s3(test::greedy_config(
                  model, {"sampling.max_tokens=30", stop_toml, "proposer.kind=oracle",
                          "proposer.k=8", "proposer.oracle=\"" + test::join_ids(base.tokens) + "\"",
                          "proposer.prompt_length=" + std::to_string(prompt_length)}),
              f.registry);
    GenerationResult a = p3.generate("hello"), b = s3.generate("hello");
    CHECK(a.text == expected);
    CHECK(b.text == expected);
    CHECK(a.stop_reason == "stop");
    CHECK(test::join_ids(a.tokens) == test::join_ids(b.tokens));
  }
}

TEST_CASE("bad requests fail cleanly and the engine goes on") {
  Fixture f;
  test::RandomLlamaSpec spec;
  spec.n_ctx = 32;
  const std::string model = f.random_model("small-ctx.gguf", spec);
  Engine engine(test::greedy_config(model, {"sampling.max_tokens=4"}), f.registry);
  CHECK_THROWS_WITH_AS(engine.generate(std::string(100, 'a')),
                       doctest::Contains("leaving no room to generate"), UsageError);
  CHECK(engine.generate("ok").tokens.size() == 4);
  // A long generation stops at the context instead of overflowing it.
  GenerationResult r = engine.generate(
      "ok", {.max_tokens = 100, .on_text = {}, .sampling = {}, .cancelled = {}, .on_round = {}});
  CHECK(r.stop_reason == "context");
  CHECK(r.tokens.size() < 32);
}

TEST_CASE("configuration mistakes name the file position") {
  Fixture f;
  const std::string model = f.random_model("cfg.gguf", test::RandomLlamaSpec{});
  CHECK_THROWS_WITH_AS(Engine(test::greedy_config(model, {"proposer.kind=ngrm"}), f.registry),
                       doctest::Contains("unknown proposer plugin 'ngrm'"), UsageError);
  CHECK_THROWS_WITH_AS(
      Engine(test::greedy_config(model, {"proposer.kind=ngram", "acceptance.rule=typical"}),
             f.registry),
      doctest::Contains("allow_lossy"), UsageError);
  CHECK_THROWS_WITH_AS(
      Engine(test::greedy_config(model, {"proposer.kind=ngram", "acceptance.rule=rejection"}),
             f.registry),
      doctest::Contains("q"), UsageError);
  CHECK_THROWS_WITH_AS(
      Engine(test::greedy_config(model, {"proposer.kind=ngram", "proposer.max_n=0"}), f.registry),
      doctest::Contains("key 'max_n' must be in [min_n, 64]"), UsageError);
  CHECK_THROWS_WITH_AS(Engine(test::greedy_config(f.dir + "/missing.gguf", {}), f.registry),
                       doctest::Contains("missing.gguf"), Error);
  // The random model's heads are 16 wide: q8_0 rows hold whole blocks of 32.
  CHECK_THROWS_WITH_AS(Engine(test::greedy_config(model, {"engine.kv_type=\"q8_0\""}), f.registry),
                       doctest::Contains("multiple of 32 (16 here)"), UsageError);
}

TEST_CASE("draft-model proposer: exact at temperature 0, its own KV rolled back correctly") {
  Fixture f;
  test::RandomLlamaSpec spec;
  spec.seed = 21;
  const std::string target = f.random_model("dm-target.gguf", spec);
  test::RandomLlamaSpec draft_spec = spec;
  draft_spec.seed = 22;
  draft_spec.n_layer = 1;
  draft_spec.n_embd = 32;
  draft_spec.n_ff = 64;
  draft_spec.vocab = 258 + 2;  // a padded vocabulary of another size is tolerated
  const std::string draft = f.random_model("dm-draft.gguf", draft_spec);

  Engine plain(test::greedy_config(target, {"sampling.max_tokens=32"}), f.registry);
  for (const std::string& prompt : kPrompts) {
    CAPTURE(prompt);
    GenerationResult base = plain.generate(prompt);
    for (const std::string& model : {target, draft}) {
      for (const char* mode : {"sample", "greedy"}) {
        CAPTURE(model);
        CAPTURE(mode);
        Engine e(test::greedy_config(target, {"sampling.max_tokens=32", "proposer.kind=draft-model",
                                              "proposer.model=\"" + model + "\"", "proposer.k=4",
                                              std::string("proposer.mode=") + mode}),
                 f.registry);
        CHECK(e.rule_name() == "rejection");
        GenerationResult out = e.generate(prompt);
        CHECK(test::join_ids(out.tokens) == test::join_ids(base.tokens));
        if (model == target) {  // the target drafting for itself is always right
          CHECK(out.stats.accepted == out.stats.drafted);
          CHECK(out.stats.tau() > 3.0);
        }
      }
    }
  }
}

TEST_CASE("draft-model proposer: a draft that claims a huge context runs") {
  // A draft file with context_length 2^30 once asked for a cache of 2^30 rows at once (half
  // a TB) and failed; caches are pools of blocks taken as sequences grow, so it runs.
  Fixture f;
  test::RandomLlamaSpec spec;
  spec.seed = 41;
  const std::string target = f.random_model("huge-ctx-target.gguf", spec);
  spec.n_ctx = 1u << 30;  // the same weights, claiming a huge context
  const std::string draft = f.random_model("huge-ctx-draft.gguf", spec);
  Engine plain(test::greedy_config(target, {"sampling.max_tokens=24"}), f.registry);
  Engine speculative(
      test::greedy_config(
          target, {"sampling.max_tokens=24", "proposer.kind=draft-model",
                   "proposer.model=\"" + draft + "\"", "proposer.k=3", "acceptance.rule=greedy"}),
      f.registry);
  const GenerationResult a = plain.generate("hello"), b = speculative.generate("hello");
  CHECK(test::join_ids(a.tokens) == test::join_ids(b.tokens));
  CHECK(b.stats.accepted == b.stats.drafted);  // the draft is the same model
}

TEST_CASE("draft-model proposer: a draft with another vocabulary is refused clearly") {
  Fixture f;
  test::RandomLlamaSpec spec;
  const std::string target = f.random_model("vm-target.gguf", spec);
  // Same size, but the byte tokens are written shifted: every id means something else.
  std::string other = f.dir + "/vm-other.gguf";
  {
    GgufFile file = GgufFile::open(target);
    (void)file;
  }
  test::RandomLlamaSpec small = spec;
  small.vocab = 258;
  small.seed = 3;
  test::write_random_llama(other, small);
  // Padding-only differences pass ...
  CHECK_NOTHROW(Engine(test::greedy_config(target, {"proposer.kind=draft-model",
                                                    "proposer.model=\"" + other + "\""}),
                       f.registry));
  // ... a missing file is named ...
  CHECK_THROWS_WITH_AS(
      Engine(test::greedy_config(target, {"proposer.kind=draft-model",
                                          "proposer.model=\"" + f.dir + "/nope.gguf\""}),
             f.registry),
      doctest::Contains("nope.gguf"), Error);
  // ... and so is a draft without a model.
  CHECK_THROWS_WITH_AS(
      Engine(test::greedy_config(target, {"proposer.kind=draft-model"}), f.registry),
      doctest::Contains("needs [proposer] model"), UsageError);
}

TEST_CASE("k = \"auto\": adaptive draft length keeps greedy output exact") {
  Fixture f;
  const std::string target = f.random_model("auto-target.gguf", 31);
  Engine plain(test::greedy_config(target, {"sampling.max_tokens=48"}), f.registry);
  for (const std::string& prompt : kPrompts) {
    CAPTURE(prompt);
    GenerationResult base = plain.generate(prompt);
    for (const char* kind : {"ngram", "draft-model"}) {
      CAPTURE(kind);
      Engine e(test::greedy_config(target,
                                   {"sampling.max_tokens=48", std::string("proposer.kind=") + kind,
                                    "proposer.model=\"" + target + "\"", "proposer.k=auto"}),
               f.registry);
      GenerationResult out = e.generate(prompt);
      CHECK(test::join_ids(out.tokens) == test::join_ids(base.tokens));
      if (std::string(kind) == "draft-model") CHECK(out.stats.accepted > 0);
    }
  }
}

TEST_CASE("audit -c: the configured speculative run against plain sampling on real models") {
  Fixture f;
  test::RandomLlamaSpec spec;
  spec.seed = 41;
  spec.weight_scale = 0.3f;  // peaked distributions: few outcomes, a powerful test
  const std::string target = f.random_model("audit-target.gguf", spec);
  ConfigAuditOptions o;
  o.prompt = "ab";
  o.samples = SPECD_SANITIZED ? 150 : 400;  // the sanitizers' build runs ten times slower
  // The rule's Markov audit is audit_test's subject; here it runs its paths, not its power.
  if (SPECD_SANITIZED) o.rule_samples = 2000;
  Config exact = test::greedy_config(target, {"sampling.temperature=1", "proposer.kind=draft-model",
                                              "proposer.model=\"" + target + "\"", "proposer.k=3"});
  ConfigAuditResult r = audit_config(exact, f.registry, o);
  CHECK(r.rule == "rejection");
  CHECK(r.label == "exact");
  CHECK(r.verdict == "lossless");
  CHECK(r.bins > 2);
  CHECK(r.p_value >= o.alpha);
  // A lossy rule is reported as lossy whatever it measures.
  Config lossy =
      test::greedy_config(target, {"sampling.temperature=1", "proposer.kind=draft-model",
                                   "proposer.model=\"" + target + "\"", "acceptance.rule=typical",
                                   "acceptance.allow_lossy=true"});
  CHECK(audit_config(lossy, f.registry, o).verdict == "lossy");
  CHECK_THROWS_AS(audit_config(test::greedy_config(target, {}), f.registry, o), UsageError);
}

TEST_CASE(
    "a hybrid target (recurrent state): greedy speculative output equals plain, and "
    "sampled MTP speculation draws plain decoding's distribution") {
  // A random qwen35 (gated DeltaNet layers, a gated attention layer, an MTP layer): every
  // rejected draft's state is restored by a replay (chains) or a node's snapshot (trees).
  Fixture f;
  const std::string model = f.random_model("qwen35.gguf", random_qwen35_spec(16, 51));
  const auto configured = [&](const std::vector<std::string>& proposer) {
    return test::greedy_config(model, concat({"sampling.max_tokens=32"}, proposer));
  };
  Engine plain(configured({}), f.registry);
  Engine ngram(configured(kGreedyNgram), f.registry);
  Engine mtp(configured({"proposer.kind=auto", "proposer.k=3", "proposer.mode=greedy"}),
             f.registry);
  for (const std::string& prompt : kPrompts) {
    CAPTURE(prompt);
    const GenerationResult base = plain.generate(prompt);
    CHECK(test::join_ids(ngram.generate(prompt).tokens) == test::join_ids(base.tokens));
    CHECK(test::join_ids(mtp.generate(prompt).tokens) == test::join_ids(base.tokens));
    const size_t prompt_length = plain.tokenizer().encode(prompt).size();
    check_oracle_replays_plain(configured, f.registry, prompt, base, prompt_length,
                               [](const GenerationResult& out) {
                                 // rejections: states restored
                                 CHECK(out.stats.accepted < out.stats.drafted);
                               });
  }
  // Sampled: the MTP layer's draws under the exact rule against plain sampling.
  ConfigAuditOptions o;
  o.prompt = "ab";
  o.tokens = 2;
  o.samples = SPECD_SANITIZED ? 150 : 400;
  if (SPECD_SANITIZED) o.rule_samples = 2000;  // as above: the rule's own audit is not the subject
  const Config sampled =
      test::greedy_config(model, {"sampling.temperature=1", "proposer.kind=mtp", "proposer.k=3",
                                  "proposer.model=\"" + model + "\""});
  const ConfigAuditResult r = audit_config(sampled, f.registry, o);
  CHECK(r.label == "exact");
  CHECK(r.verdict == "lossless");
  CHECK(r.p_value >= o.alpha);
}

TEST_CASE("a qwen35moe target: its MTP layer, experts and all, drafts greedy output exactly") {
  // The trunk's FFNs and the MTP layer's are experts beside a shared expert.
  Fixture f;
  test::RandomLlamaSpec spec = random_qwen35_spec(16, 53);
  spec.architecture = "qwen35moe";
  spec.n_expert = 4;
  spec.n_expert_used = 2;
  spec.n_ff_exp = 32;
  spec.n_ff_shared = 64;
  const std::string model = f.random_model("qwen35moe.gguf", spec);
  const auto configured = [&](const std::vector<std::string>& proposer) {
    return test::greedy_config(model, concat({"sampling.max_tokens=32"}, proposer));
  };
  Engine plain(configured({}), f.registry);
  Engine mtp(configured({"proposer.kind=auto", "proposer.k=3", "proposer.mode=greedy"}),
             f.registry);
  for (const std::string& prompt : kPrompts) {
    CAPTURE(prompt);
    const GenerationResult base = plain.generate(prompt);
    const GenerationResult drafted = mtp.generate(prompt);
    CHECK(test::join_ids(drafted.tokens) == test::join_ids(base.tokens));
    CHECK(drafted.stats.drafted > 0);
  }
}

TEST_CASE("a hybrid target with f16 and q8_0 KV caches: its MTP drafts keep greedy output exact") {
  // The attention layers' rows in the cache's type, the recurrent state in f32 beside them.
  Fixture f;
  // head_dim 32: a q8_0 row holds whole blocks of 32
  const std::string model = f.random_model("qwen35-kv.gguf", random_qwen35_spec(32, 52));
  // Greedy text hardly moves with the cache's rounding on so small a model; sampled text
  // (the same seed) shows that the type took effect.
  const std::vector<std::string> sampled = {"sampling.max_tokens=32", "sampling.temperature=1",
                                            "engine.seed=5"};
  Engine f32(test::greedy_config(model, sampled), f.registry);
  for (const char* kv : {"f16", "q8_0"}) {
    CAPTURE(kv);
    const std::string type = std::string("engine.kv_type=\"") + kv + "\"";
    Engine plain(test::greedy_config(model, {"sampling.max_tokens=32", type}), f.registry);
    Engine mtp(test::greedy_config(model, {"sampling.max_tokens=32", "proposer.kind=mtp",
                                           "proposer.k=3", "proposer.mode=greedy", type}),
               f.registry);
    std::vector<std::string> typed = sampled;
    typed.push_back(type);
    Engine plain_sampled(test::greedy_config(model, typed), f.registry);
    bool differs_from_f32 = false;
    for (const std::string& prompt : kPrompts) {
      CAPTURE(prompt);
      const GenerationResult base = plain.generate(prompt);
      differs_from_f32 =
          differs_from_f32 || plain_sampled.generate(prompt).tokens != f32.generate(prompt).tokens;
      const GenerationResult out = mtp.generate(prompt);
      CHECK(test::join_ids(out.tokens) == test::join_ids(base.tokens));
      CHECK(out.stats.drafted > 0);
    }
    // The type took effect on the attention layers' rows (q8_0 certainly; f16 rounds this
    // model's rows too little to change a draw).
    if (std::string(kv) == "q8_0") CHECK(differs_from_f32);
  }
}

TEST_CASE("an interrupt ends generation between rounds with what was generated") {
  Fixture f;
  const std::string model = f.random_model("interrupt.gguf", test::RandomLlamaSpec{});
  Engine engine(test::greedy_config(model, {"sampling.max_tokens=40"}), f.registry);
  const GenerationResult full = engine.generate("ok");
  REQUIRE(full.tokens.size() == 40);
  // The flag a signal handler would set, raised here by the first streamed piece.
  volatile std::sig_atomic_t flag = 0;
  GenerateOptions options;
  options.on_text = [&](const std::string&) { flag = 1; };
  options.interrupt = &flag;
  const GenerationResult cut = engine.generate("ok", options);
  CHECK(cut.stop_reason == "interrupted");
  REQUIRE(!cut.tokens.empty());
  CHECK(cut.tokens.size() < full.tokens.size());
  // What was generated is the uninterrupted run's beginning (plain greedy decoding).
  CHECK(std::equal(cut.tokens.begin(), cut.tokens.end(), full.tokens.begin()));
}

TEST_CASE("a stop string never cuts a UTF-8 character, even one built in code") {
  Fixture f;
  const std::string model = f.random_model("utf8-stop.gguf", test::RandomLlamaSpec{});
  Config config = test::greedy_config(model, {"sampling.max_tokens=60"});
  const GenerationResult full = Engine(config, f.registry).generate("ok");
  // The first continuation byte of a multi-byte character in the output (random byte tokens
  // give invalid sequences, rendered as U+FFFD = EF BF BD, and real characters).
  const size_t at = full.text.find_first_of(
      "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b"
      "\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97"
      "\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f\xa0\xa1\xa2\xa3"
      "\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xab\xac\xad\xae\xaf"
      "\xb0\xb1\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xbb"
      "\xbc\xbd\xbe\xbf");
  REQUIRE(at != std::string::npos);
  config.sampling.stop = {full.text.substr(at, 1)};  // not whole characters: never matches
  std::string streamed;
  GenerateOptions options;
  options.on_text = [&](const std::string& piece) { streamed += piece; };
  const GenerationResult r = Engine(config, f.registry).generate("ok", options);
  CHECK(r.stop_reason == "length");
  CHECK(r.text == full.text);
  CHECK(streamed == r.text);
}

// A text-based proposer through the host's text service (specd_text_service): on the shipped
// target, a prompt that repeats itself is drafted from its own text, and greedy output
// equals plain output.
TEST_CASE("a proposer drafting in text through the host's text service" * SPECD_MAY_SKIP) {
  const std::string target = std::string(SPECD_SOURCE_DIR) + "/models/target.gguf";
  if (!std::filesystem::exists(target)) {
    ::specd::test::skip_missing(target, " is missing");
    return;
  }
  Fixture f;
  const std::string prompt =
      "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\ndef add(a, b):";
  Engine plain(test::greedy_config(target, {"sampling.max_tokens=32", "engine.backend=cpu"}),
               f.registry);
  Engine text(test::greedy_config(target, {"sampling.max_tokens=32", "engine.backend=cpu",
                                           "proposer.kind=text-lookup", "proposer.k=4"}),
              f.registry);
  const GenerationResult base = plain.generate(prompt);
  const GenerationResult out = text.generate(prompt);
  CHECK(out.tokens == base.tokens);
  CHECK(out.stats.drafted > 0);
  CHECK(out.stats.accepted > 0);
  MESSAGE("text-lookup: drafted " << out.stats.drafted << ", accepted " << out.stats.accepted);
  // A bad parameter is refused at its key.
  CHECK_THROWS_WITH_AS(
      Engine(test::greedy_config(target, {"proposer.kind=text-lookup", "proposer.match=0"}),
             f.registry),
      doctest::Contains("match must be in [1, 256]"), Error);
}
