#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "bench/constructed_dflash.hpp"
#include "bench/constructed_eagle3.hpp"
#include "bench/constructed_model.hpp"
#include "bench/weight_copy.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "engine/engine.hpp"
#include "gguf/gguf_reader.hpp"
#include "plugin/registry.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace specd;

namespace {

// Greedy decoding of `model` on the CPU, with `extra` overrides (a proposer) appended.
Config plain_config(const std::string& model, int max_tokens,
                    const std::vector<std::string>& extra = {}) {
  std::vector<std::string> all = {"target.model=\"" + model + "\"",
                                  "engine.backend=cpu",
                                  "engine.threads=1",
                                  "sampling.temperature=0",
                                  "sampling.ignore_eos=true",
                                  "sampling.max_tokens=" + std::to_string(max_tokens)};
  all.insert(all.end(), extra.begin(), extra.end());
  return parse_config("", "test.toml", all);
}

// The "tiny" preset, widened so that the planted map survives quantisation.
bench::ConstructedSpec tiny_wide_spec() {
  bench::ConstructedSpec spec = bench::constructed_preset("tiny");
  spec.n_embd = 128;
  spec.n_ff = 256;
  return spec;
}

// Every token of `tokens` is the planted successor of the one before it, starting from the
// last token of `prompt`.
void check_walks_map(Engine& engine, const std::string& prompt, const std::vector<int32_t>& tokens,
                     const std::vector<int32_t>& next) {
  int32_t prev = engine.tokenizer().encode(prompt, true).back();
  for (int32_t t : tokens) {
    CHECK(t == next[prev]);
    prev = t;
  }
}

// A constructed proposer for the widened tiny target: how it is written and run.
struct ConstructedProposer {
  std::string dir_name;  // of the scratch directory
  std::string file;      // the proposer's file name there
  void (*write)(const std::string& path, const bench::ConstructedSpec& target, double agreement);
  double refused_agreement;           // one that `write` must refuse
  std::vector<std::string> settings;  // of the proposer, but for its model file
  double max_rate_at_half;            // the acceptance rate stays under this at agreement 0.5
};

// Built to agree with the map on fraction a (1 and 0.5), the proposer leaves plain greedy
// decoding's output as it is; every draft is accepted at a = 1, and at a = 0.5 some are,
// at a rate under `max_rate_at_half`.
void check_constructed_proposer(const ConstructedProposer& c) {
  const std::string dir = test::temp_dir(c.dir_name);
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  const bench::ConstructedSpec spec = tiny_wide_spec();
  bench::write_constructed_model(dir + "/target.gguf", spec);
  CHECK_THROWS_AS(c.write(dir + "/bad.gguf", spec, c.refused_agreement), UsageError);
  Engine plain(plain_config(dir + "/target.gguf", 48), registry);
  for (double a : {1.0, 0.5}) {
    CAPTURE(a);
    const std::string path = dir + "/" + c.file;
    c.write(path, spec, a);
    std::vector<std::string> overrides = c.settings;
    overrides.push_back("proposer.model=\"" + path + "\"");
    Engine speculative(plain_config(dir + "/target.gguf", 48, overrides), registry);
    for (const std::string prompt : {"abc", "Q"}) {
      GenerationResult r = speculative.generate(prompt);
      CHECK(r.tokens == plain.generate(prompt).tokens);
      if (a == 1.0) CHECK(r.stats.acceptance_rate() == doctest::Approx(1.0));
      if (a == 0.5) CHECK(r.stats.acceptance_rate() < c.max_rate_at_half);
      if (a == 0.5) CHECK(r.stats.accepted > 0);
    }
  }
}

}  // namespace

TEST_CASE("constructed model: plain greedy decoding walks the planted map") {
  const std::string dir = test::temp_dir("bench-constructed");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  for (const char* type : {"f16", "q8_0"}) {
    CAPTURE(type);
    bench::ConstructedSpec spec = tiny_wide_spec();
    spec.weights = type;
    const std::string path = dir + "/target-" + type + ".gguf";
    bench::write_constructed_model(path, spec);
    const std::vector<int32_t> next = bench::constructed_next(spec);
    Engine engine(plain_config(path, 24), registry);
    for (const std::string prompt : {"a", "def", "Q"}) {
      GenerationResult r = engine.generate(prompt);
      REQUIRE(r.tokens.size() == 24);
      check_walks_map(engine, prompt, r.tokens, next);
    }
  }
}

TEST_CASE("constructed drafts agree with the map on the stated fraction") {
  bench::ConstructedSpec target = bench::constructed_preset("tiny");
  const std::vector<int32_t> planted = bench::constructed_next(target);
  for (double a : {1.0, 0.9, 0.5}) {
    const std::vector<int32_t> draft = bench::constructed_next(bench::constructed_draft(a));
    int agree = 0, total = 0;
    for (int32_t t = 2 + 0x20; t <= 2 + 0x7E; ++t, ++total) agree += draft[t] == planted[t];
    CHECK(double(agree) / total == doctest::Approx(a).epsilon(0.02));
  }
  CHECK(bench::constructed_parameters(bench::constructed_preset("0.1b")) > 80'000'000);
  CHECK(bench::constructed_parameters(bench::constructed_preset("1.5b")) < 1'600'000'000);
  CHECK_THROWS(bench::constructed_preset("7b"));
}

TEST_CASE("constructed draft: greedy speculative decoding accepts what the draft agrees on") {
  const std::string dir = test::temp_dir("bench-constructed-draft");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  const bench::ConstructedSpec spec = tiny_wide_spec();
  bench::write_constructed_model(dir + "/target.gguf", spec);
  bench::write_constructed_model(dir + "/draft.gguf", bench::constructed_draft(1.0));
  Engine engine(
      plain_config(dir + "/target.gguf", 32,
                   {"proposer.kind=\"draft-model\"", "proposer.model=\"" + dir + "/draft.gguf\"",
                    "proposer.mode=\"greedy\"", "proposer.k=4", "acceptance.rule=\"greedy\""}),
      registry);
  GenerationResult r = engine.generate("abc");
  CHECK(r.stats.acceptance_rate() == doctest::Approx(1.0));
  CHECK(r.stats.tau() > 4.0);
}

TEST_CASE("constructed EAGLE-3 head: drafts the map where it agrees, output equals plain") {
  check_constructed_proposer(
      {.dir_name = "bench-constructed-eagle3",
       .file = "eagle3.gguf",
       .write = bench::write_constructed_eagle3,
       .refused_agreement = 1.5,
       .settings = {"proposer.kind=\"eagle\"", "proposer.k=4", "proposer.depth=4",
                    "proposer.top_k=1", "proposer.max_nodes=4"},
       // Every draft is right where the head follows the map: all of them at a = 1, and a
       // first token right about half the time at a = 0.5.
       .max_rate_at_half = 0.6});
}

TEST_CASE("constructed DFlash drafter: its first token follows the map, output equals plain") {
  check_constructed_proposer(
      {.dir_name = "bench-constructed-dflash",
       .file = "dflash.gguf",
       .write = bench::write_constructed_dflash,
       .refused_agreement = -0.5,
       .settings = {"proposer.kind=\"dflash\"", "proposer.k=1", "acceptance.rule=\"exact-match\""},
       .max_rate_at_half = 0.7});
}

TEST_CASE("weight copy: q8_0 copy of a model still walks the planted map") {
  const std::string dir = test::temp_dir("bench-weight-copy");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  const bench::ConstructedSpec spec = tiny_wide_spec();
  bench::write_constructed_model(dir + "/f16.gguf", spec);
  CHECK(bench::write_weight_copy(dir + "/f16.gguf", dir + "/q8.gguf", GgmlType::kQ8_0) ==
        2 + 7 * spec.n_layer);
  const std::vector<int32_t> next = bench::constructed_next(spec);
  Engine engine(plain_config(dir + "/q8.gguf", 16), registry);
  check_walks_map(engine, "x", engine.generate("x").tokens, next);
}

TEST_CASE("q4_K_M (llama.cpp's mix of q4_K and q6_K): constructed model and weight copy") {
  const std::string dir = test::temp_dir("bench-q4km");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  bench::ConstructedSpec spec = bench::constructed_preset("tiny");  // rows of 256 and 512
  spec.weights = "q4_K_M";
  bench::write_constructed_model(dir + "/q4km.gguf", spec);
  {
    const GgufFile f = GgufFile::open(dir + "/q4km.gguf");
    CHECK(f.require_tensor("output.weight").type == GgmlType::kQ6_K);
    // use_more_bits for 2 layers: layer 1 (the last eighth), not layer 0.
    CHECK(f.require_tensor("blk.1.attn_v.weight").type == GgmlType::kQ6_K);
    CHECK(f.require_tensor("blk.1.ffn_down.weight").type == GgmlType::kQ6_K);
    CHECK(f.require_tensor("blk.0.attn_v.weight").type == GgmlType::kQ4_K);
    CHECK(f.require_tensor("blk.0.attn_q.weight").type == GgmlType::kQ4_K);
    CHECK(f.require_tensor("token_embd.weight").type == GgmlType::kQ4_K);
  }
  const std::vector<int32_t> next = bench::constructed_next(spec);
  spec.weights = "f16";
  bench::write_constructed_model(dir + "/f16.gguf", spec);
  CHECK(bench::write_weight_copy(dir + "/f16.gguf", dir + "/copy.gguf", GgmlType::kQ4_K) ==
        2 + 7 * spec.n_layer);
  for (const char* file : {"q4km.gguf", "copy.gguf"}) {
    CAPTURE(file);
    Engine engine(plain_config(dir + "/" + file, 16), registry);
    check_walks_map(engine, "x", engine.generate("x").tokens, next);
  }
}

namespace {

// The tiny qwen3moe (or gpt-oss): 8 experts of 128 per layer, 2 per token.
bench::ConstructedSpec tiny_moe_spec(const std::string& weights,
                                     const std::string& architecture = "qwen3moe") {
  bench::ConstructedSpec spec = bench::constructed_preset("tiny", architecture);
  spec.weights = weights;
  return spec;
}

// The expert hyperparameters and tensors of a written tiny qwen3moe or gpt-oss, and its
// parameter count as constructed_parameters states it (every tensor's elements summed).
void check_moe_file(const GgufFile& f, const bench::ConstructedSpec& spec) {
  const std::string a = spec.architecture + ".";
  CHECK(f.get_string("general.architecture") == spec.architecture);
  CHECK(f.get_u32(a + "expert_count") == 8);
  CHECK(f.get_u32(a + "expert_used_count") == 2);
  CHECK(f.get_u32(a + "expert_feed_forward_length") == 128);
  CHECK(f.get_u32(a + "attention.key_length") == 64);  // d / n_head
  const GgufTensor& down = f.require_tensor("blk.1.ffn_down_exps.weight");
  CHECK(down.n_dims == 3);
  CHECK(down.ne[0] == 128);
  CHECK(down.ne[1] == 256);
  CHECK(down.ne[2] == 8);
  CHECK(f.require_tensor("blk.0.ffn_gate_inp.weight").type == GgmlType::kF32);
  CHECK(f.tensor("blk.0.ffn_gate.weight") == nullptr);  // no dense FFN beside the experts
  if (spec.architecture == "gpt-oss") {  // its window, YaRN, sinks and biases, all f32
    CHECK(f.get_u32(a + "attention.sliding_window") == 128);
    CHECK(f.get_string(a + "rope.scaling.type") == "yarn");
    CHECK(f.get_f32(a + "rope.scaling.factor") == 32.0f);
    CHECK(f.get_u32(a + "rope.scaling.original_context_length") == 4096);
    CHECK(f.require_tensor("blk.0.attn_sinks.weight").n_elements == 4);
    for (const char* name : {"blk.1.attn_output.bias", "blk.1.ffn_gate_inp.bias",
                             "blk.1.ffn_up_exps.bias", "blk.1.ffn_down_exps.bias"})
      CHECK(f.require_tensor(name).type == GgmlType::kF32);
    CHECK(f.require_tensor("blk.1.ffn_down_exps.bias").ne[1] == 8);
    CHECK(f.tensor("blk.0.post_attention_norm.weight") != nullptr);
  } else {
    CHECK(f.require_tensor("blk.0.attn_q_norm.weight").n_elements == 64);
  }
  int64_t elements = 0;
  for (const GgufTensor& t : f.tensors()) elements += t.n_elements;
  CHECK(uint64_t(elements) == bench::constructed_parameters(spec));
}

}  // namespace

TEST_CASE("constructed qwen3moe: expert metadata, and greedy decoding walks the planted map") {
  const std::string dir = test::temp_dir("bench-constructed-moe");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  for (const char* type : {"f16", "q4_K_M", "mxfp4_moe"}) {
    CAPTURE(type);
    const bench::ConstructedSpec spec = tiny_moe_spec(type);
    const std::string path = dir + "/target-" + type + ".gguf";
    bench::write_constructed_model(path, spec);
    check_moe_file(GgufFile::open(path), spec);
    const std::vector<int32_t> next = bench::constructed_next(spec);
    Engine engine(plain_config(path, 24), registry);
    for (const std::string prompt : {"a", "def", "Q"}) {
      GenerationResult r = engine.generate(prompt);
      REQUIRE(r.tokens.size() == 24);
      check_walks_map(engine, prompt, r.tokens, next);
    }
  }
  const GgufFile q4 = GgufFile::open(dir + "/target-q4_K_M.gguf");
  // llama.cpp's Q4_K_M on an 8-expert model: attn_k and attn_v q8_0, attn_output q5_K; the
  // experts' ffn_down_exps raised like ffn_down (layer 1 of 2: q6_K, rows of 128 -> q8_0;
  // layer 0: q4_K -> q5_0), their gate and up the base q4_K.
  CHECK(q4.require_tensor("blk.0.attn_k.weight").type == GgmlType::kQ8_0);
  CHECK(q4.require_tensor("blk.0.attn_v.weight").type == GgmlType::kQ8_0);
  CHECK(q4.require_tensor("blk.0.attn_output.weight").type == GgmlType::kQ5_K);
  CHECK(q4.require_tensor("blk.0.attn_q.weight").type == GgmlType::kQ4_K);
  CHECK(q4.require_tensor("blk.1.ffn_down_exps.weight").type == GgmlType::kQ8_0);
  CHECK(q4.require_tensor("blk.0.ffn_down_exps.weight").type == GgmlType::kQ5_0);
  CHECK(q4.require_tensor("blk.0.ffn_gate_exps.weight").type == GgmlType::kQ4_K);
  const GgufFile mx = GgufFile::open(dir + "/target-mxfp4_moe.gguf");
  CHECK(mx.get_u32("general.file_type") == 38);
  for (const char* name :
       {"blk.0.ffn_gate_exps.weight", "blk.1.ffn_up_exps.weight", "blk.1.ffn_down_exps.weight"})
    CHECK(mx.require_tensor(name).type == GgmlType::kMXFP4);
  for (const char* name : {"token_embd.weight", "output.weight", "blk.1.attn_v.weight"})
    CHECK(mx.require_tensor(name).type == GgmlType::kQ8_0);
}

TEST_CASE("constructed gpt-oss: its layout, and greedy decoding walks the planted map") {
  const std::string dir = test::temp_dir("bench-constructed-gpt-oss");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  for (const char* type : {"f16", "mxfp4_moe"}) {
    CAPTURE(type);
    const bench::ConstructedSpec spec = tiny_moe_spec(type, "gpt-oss");
    const std::string path = dir + "/target-" + type + ".gguf";
    bench::write_constructed_model(path, spec);
    check_moe_file(GgufFile::open(path), spec);
    const std::vector<int32_t> next = bench::constructed_next(spec);
    // 200 tokens: the even layers' window of 128 slides.
    Engine engine(plain_config(path, 200), registry);
    for (const std::string prompt : {"a", "def"}) {
      GenerationResult r = engine.generate(prompt);
      REQUIRE(r.tokens.size() == 200);
      check_walks_map(engine, prompt, r.tokens, next);
    }
  }
  bench::ConstructedSpec big = bench::constructed_preset("moe-3b", "gpt-oss");
  big.vocab = 32000;
  // qwen3moe's moe-3b with biases and sinks in place of q/k norms.
  CHECK(bench::constructed_parameters(big) == 2'963'145'920);
  CHECK(bench::constructed_active_parameters(big) == 493'683'904);
}

TEST_CASE("constructed qwen3moe: a dense llama draft of the same vocabulary is accepted") {
  const std::string dir = test::temp_dir("bench-constructed-moe-draft");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  bench::write_constructed_model(dir + "/target.gguf", tiny_moe_spec("mxfp4_moe"));
  const bench::ConstructedSpec draft = bench::constructed_draft(1.0);
  CHECK(draft.architecture == "llama");
  CHECK(draft.n_expert == 0);
  bench::write_constructed_model(dir + "/draft.gguf", draft);
  Engine engine(
      plain_config(dir + "/target.gguf", 32,
                   {"proposer.kind=\"draft-model\"", "proposer.model=\"" + dir + "/draft.gguf\"",
                    "proposer.mode=\"greedy\"", "proposer.k=4", "acceptance.rule=\"greedy\""}),
      registry);
  GenerationResult r = engine.generate("abc");
  CHECK(r.stats.acceptance_rate() == doctest::Approx(1.0));
  CHECK(r.stats.tau() > 4.0);
}

TEST_CASE("constructed qwen3moe: parameter counts, and the spec record holds the experts") {
  bench::ConstructedSpec big = bench::constructed_preset("moe-3b", "qwen3moe");
  big.vocab = 32000;
  // The 3B-A0.5B class: 2.96 B weights, 0.49 B read per token.
  CHECK(bench::constructed_parameters(big) == 2'959'405'568);
  CHECK(bench::constructed_active_parameters(big) == 493'154'816);
  const bench::ConstructedSpec dense = bench::constructed_preset("0.1b");
  CHECK(bench::constructed_active_parameters(dense) == bench::constructed_parameters(dense));

  const std::string path = test::temp_dir("bench-constructed-moe-record") + "/moe.gguf";
  bench::ConstructedSpec spec = tiny_moe_spec("f16");
  CHECK(bench::ensure_constructed_model(path, spec));
  CHECK_FALSE(bench::ensure_constructed_model(path, spec));
  spec.n_expert_used = 3;  // another model: rewritten, not reused
  CHECK(bench::ensure_constructed_model(path, spec));
  CHECK(GgufFile::open(path).get_u32("qwen3moe.expert_used_count") == 3);
}

TEST_CASE("constructed qwen3moe: sizes, drafts and expert settings that do not fit are refused") {
  CHECK_THROWS_WITH_AS(bench::constructed_preset("moe-3b"),
                       doctest::Contains("'moe-3b' is a mixture of experts: it needs the "
                                         "architecture qwen3moe"),
                       UsageError);
  CHECK_THROWS_WITH_AS(bench::constructed_preset("1.5b", "qwen3moe"),
                       doctest::Contains("'1.5b' is a dense shape"), UsageError);
  CHECK_THROWS_WITH_AS(bench::constructed_preset("7b", "qwen3moe"),
                       doctest::Contains("unknown constructed model size '7b' (tiny, moe-3b)"),
                       UsageError);
  CHECK_THROWS_WITH_AS(bench::constructed_draft(1.0, "moe-3b"),
                       doctest::Contains("constructed drafts are dense llama models"), UsageError);
  CHECK(bench::constructed_preset("tiny").n_expert == 0);  // tiny stays dense for llama
  const std::string dir = test::temp_dir("bench-constructed-moe-refused");
  bench::ConstructedSpec dense_with_experts = bench::constructed_preset("tiny");
  dense_with_experts.n_expert = 8;
  CHECK_THROWS_WITH_AS(bench::write_constructed_model(dir + "/a.gguf", dense_with_experts),
                       doctest::Contains("experts need --arch qwen3moe"), UsageError);
  bench::ConstructedSpec too_many = tiny_moe_spec("f16");
  too_many.n_expert_used = 9;
  CHECK_THROWS_WITH_AS(bench::write_constructed_model(dir + "/b.gguf", too_many),
                       doctest::Contains("9 of 8 experts per token"), UsageError);
  bench::ConstructedSpec odd_experts = tiny_moe_spec("f16");
  odd_experts.n_ff_exp = 100;
  CHECK_THROWS_WITH_AS(bench::write_constructed_model(dir + "/c.gguf", odd_experts),
                       doctest::Contains("expert size 100 must be a positive multiple of 32"),
                       UsageError);
}

TEST_CASE("weight copy of a qwen3moe: mxfp4_moe converts the expert stacks, not the router") {
  const std::string dir = test::temp_dir("bench-weight-copy-moe");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  const bench::ConstructedSpec spec = tiny_moe_spec("f16");
  bench::write_constructed_model(dir + "/f16.gguf", spec);
  // token_embd, output and per layer attn_{q,k,v,output} and the three expert stacks.
  CHECK(bench::write_weight_copy(dir + "/f16.gguf", dir + "/mx.gguf",
                                 bench::weight_preset("mxfp4_moe")) == 2 + 7 * spec.n_layer);
  const GgufFile f = GgufFile::open(dir + "/mx.gguf");
  CHECK(f.require_tensor("blk.1.ffn_down_exps.weight").type == GgmlType::kMXFP4);
  CHECK(f.require_tensor("blk.1.ffn_gate_inp.weight").type == GgmlType::kF32);
  CHECK(f.require_tensor("blk.1.attn_q.weight").type == GgmlType::kQ8_0);
  CHECK(bench::matrix_type_summary(dir + "/mx.gguf") == "q8_0 ×10, mxfp4 ×6, f32 ×2");
  Engine engine(plain_config(dir + "/mx.gguf", 16), registry);
  check_walks_map(engine, "x", engine.generate("x").tokens, bench::constructed_next(spec));

  // gpt-oss: the same matrices; its biases, 2-D for the experts, stay f32 (llama-quantize
  // converts *.weight only), so the copy loads.
  const bench::ConstructedSpec oss = tiny_moe_spec("f16", "gpt-oss");
  bench::write_constructed_model(dir + "/oss-f16.gguf", oss);
  CHECK(bench::write_weight_copy(dir + "/oss-f16.gguf", dir + "/oss-q8.gguf",
                                 bench::weight_preset("q8_0")) == 2 + 7 * oss.n_layer);
  const GgufFile q8 = GgufFile::open(dir + "/oss-q8.gguf");
  CHECK(q8.require_tensor("blk.1.ffn_down_exps.bias").type == GgmlType::kF32);
  CHECK(q8.require_tensor("blk.1.ffn_down_exps.weight").type == GgmlType::kQ8_0);
  Engine oss_engine(plain_config(dir + "/oss-q8.gguf", 16), registry);
  check_walks_map(oss_engine, "x", oss_engine.generate("x").tokens, bench::constructed_next(oss));
}

TEST_CASE("constructed model with a planted text: greedy decoding writes the text over and over") {
  // " the" and " target" twice: a repeated word is two tokens of one spelling, each leading
  // on its own way; the one-byte first word is joined to the next (a byte token spells it).
  const std::string text = "A draft guesses, the target checks, the target keeps\n";
  const std::vector<std::string> words = bench::planted_words(text);
  REQUIRE(words.size() == 8);
  CHECK(words[0] == "A draft");
  CHECK(words[2] == " the");
  CHECK(words[5] == " the");
  CHECK(words[7] == " keeps\n");
  std::string joined;
  for (const std::string& w : words) joined += w;
  CHECK(joined == text);
  CHECK_THROWS_AS(bench::planted_words("A"), UsageError);
  CHECK_THROWS_AS(bench::planted_words(" \n\t"), UsageError);
  CHECK_THROWS_AS(bench::planted_words(""), UsageError);
  CHECK_THROWS_AS(bench::planted_words(std::string(5000, 'a')), UsageError);

  const std::string dir = test::temp_dir("bench-constructed-text");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  bench::ConstructedSpec spec = tiny_wide_spec();
  spec.vocab = 264 + 7;  // one word short
  spec.text = text;
  CHECK_THROWS_AS(bench::write_constructed_model(dir + "/short.gguf", spec), UsageError);
  // A DFlash drafter separates the map's tokens in its width: 130 words do not fit 128.
  bench::ConstructedSpec wide = spec;
  wide.vocab = 400;
  wide.text.clear();
  for (int i = 0; i < 130; ++i) wide.text += " w" + std::to_string(i);
  CHECK_THROWS_AS(bench::write_constructed_dflash(dir + "/dflash.gguf", wide, 1.0), UsageError);
  spec.vocab = 300;
  const std::vector<int32_t> cycle = bench::constructed_cycle(spec);
  CHECK(cycle == std::vector<int32_t>{264, 265, 266, 267, 268, 269, 270, 271});
  bench::write_constructed_model(dir + "/target.gguf", spec);
  bench::ConstructedSpec draft = bench::constructed_draft(1.0);
  draft.vocab = spec.vocab;
  draft.text = text;
  bench::write_constructed_model(dir + "/draft.gguf", draft);

  Engine plain(plain_config(dir + "/target.gguf", 12), registry);
  Engine speculative(plain_config(dir + "/target.gguf", 12,
                                  {"proposer.kind=\"draft-model\"",
                                   "proposer.model=\"" + dir + "/draft.gguf\"", "proposer.k=4"}),
                     registry);
  for (const std::string prompt : {"Q", "what does specd do?"}) {
    CAPTURE(prompt);
    const GenerationResult r = plain.generate(prompt);
    CHECK(plain.tokenizer().decode(r.tokens) == text + "A draft guesses, the target");
    const GenerationResult s = speculative.generate(prompt);
    CHECK(s.tokens == r.tokens);
    CHECK(s.stats.acceptance_rate() == doctest::Approx(1.0));
  }
}
