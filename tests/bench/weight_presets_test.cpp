// llama.cpp's file-type presets as the bench writes them: the per-tensor rules of
// llama_tensor_get_type for dense llama-like models and mixtures of experts, the fallback for
// rows that are not whole blocks, and every preset's constructed model (llama and qwen3moe)
// loading and walking its planted map.
#include <doctest/doctest.h>

#include <string>

#include "bench/constructed_model.hpp"
#include "bench/weight_presets.hpp"
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

GgmlType type_of(const std::string& preset, const std::string& tensor, int64_t row = 1024,
                 uint32_t n_layer = 32, uint32_t n_gqa = 1) {
  bench::TensorShape s;
  s.row_length = row;
  s.n_layer = n_layer;
  s.n_gqa = n_gqa;
  return bench::preset_tensor_type(bench::weight_preset(preset), tensor, s);
}

// The type of a tensor of a mixture of experts with `n_expert` experts and 32 layers: a 3-D
// expert stack (ffn_*_exps) when `n_dims` is 3.
GgmlType moe_type_of(const std::string& preset, const std::string& tensor, uint32_t n_dims,
                     uint32_t n_expert = 64, int64_t row = 1024) {
  bench::TensorShape s;
  s.row_length = row;
  s.n_dims = n_dims;
  s.n_layer = 32;
  s.n_expert = n_expert;
  return bench::preset_tensor_type(bench::weight_preset(preset), tensor, s);
}

}  // namespace

TEST_CASE("weight presets: llama-quantize's per-tensor rules") {
  using T = GgmlType;
  // Base types, and output.weight in q6_K except for q8_0 and the float presets.
  CHECK(type_of("q4_0", "blk.3.attn_q.weight") == T::kQ4_0);
  CHECK(type_of("q4_0", "output.weight") == T::kQ6_K);
  CHECK(type_of("q4_0", "token_embd.weight") == T::kQ4_0);
  CHECK(type_of("q8_0", "output.weight") == T::kQ8_0);
  CHECK(type_of("bf16", "output.weight") == T::kBF16);
  CHECK(type_of("iq4_xs", "blk.30.ffn_up.weight") == T::kIQ4_XS);
  // q2_K: attn_v q3_K (q4_K with GQA >= 4), ffn_down and attn_output q3_K.
  CHECK(type_of("q2_K", "blk.5.attn_v.weight") == T::kQ3_K);
  CHECK(type_of("q2_K", "blk.5.attn_v.weight", 1024, 32, 4) == T::kQ4_K);
  CHECK(type_of("q2_K", "blk.5.ffn_down.weight") == T::kQ3_K);
  CHECK(type_of("q2_K", "blk.5.attn_output.weight") == T::kQ3_K);
  CHECK(type_of("q2_K", "blk.5.ffn_gate.weight") == T::kQ2_K);
  // q3_K_S/M/L.
  CHECK(type_of("q3_K_S", "blk.0.attn_v.weight") == T::kQ3_K);
  CHECK(type_of("q3_K_M", "blk.1.attn_v.weight") == T::kQ5_K);
  CHECK(type_of("q3_K_M", "blk.2.attn_v.weight") == T::kQ4_K);
  CHECK(type_of("q3_K_M", "blk.1.ffn_down.weight") == T::kQ5_K);  // layer < 32 / 16
  CHECK(type_of("q3_K_M", "blk.2.ffn_down.weight") == T::kQ4_K);
  CHECK(type_of("q3_K_M", "blk.9.attn_output.weight") == T::kQ4_K);
  CHECK(type_of("q3_K_L", "blk.9.attn_v.weight") == T::kQ5_K);
  CHECK(type_of("q3_K_L", "blk.9.ffn_down.weight") == T::kQ5_K);
  CHECK(type_of("q3_K_L", "blk.9.attn_output.weight") == T::kQ5_K);
  // q4_K_S / q4_K_M / q5_K_M: use_more_bits (first and last eighth, every third between).
  CHECK(type_of("q4_K_S", "blk.3.attn_v.weight") == T::kQ5_K);
  CHECK(type_of("q4_K_S", "blk.4.attn_v.weight") == T::kQ4_K);
  CHECK(type_of("q4_K_S", "blk.3.ffn_down.weight") == T::kQ5_K);
  CHECK(type_of("q4_K_S", "blk.4.ffn_down.weight") == T::kQ4_K);
  CHECK(type_of("q4_K_M", "blk.0.attn_v.weight") == T::kQ6_K);
  CHECK(type_of("q4_K_M", "blk.4.attn_v.weight") == T::kQ4_K);
  CHECK(type_of("q4_K_M", "blk.6.ffn_down.weight") == T::kQ6_K);  // (6 - 4) % 3 == 2
  CHECK(type_of("q4_K_M", "blk.31.ffn_down.weight") == T::kQ6_K);
  CHECK(type_of("q4_K_M", "blk.9.attn_qkv.weight") == T::kQ5_K);
  CHECK(type_of("q5_K_M", "blk.0.ffn_down.weight") == T::kQ6_K);
  CHECK(type_of("q5_K_M", "blk.4.ffn_down.weight") == T::kQ5_K);
  CHECK(type_of("q5_K_S", "blk.0.ffn_down.weight") == T::kQ5_K);
  // iq4_nl / iq4_xs: ffn_down of the first eighth in q5_K; attn_v with GQA >= 4.
  CHECK(type_of("iq4_nl", "blk.0.ffn_down.weight") == T::kQ5_K);
  CHECK(type_of("iq4_nl", "blk.8.ffn_down.weight") == T::kIQ4_NL);
  CHECK(type_of("iq4_xs", "blk.8.attn_v.weight", 1024, 32, 4) == T::kQ5_K);
  // 1-D tensors are not matrices.
  bench::TensorShape norm;
  norm.row_length = 1024;
  norm.n_dims = 1;
  CHECK(bench::preset_tensor_type(bench::weight_preset("q4_0"), "blk.0.attn_norm.weight", norm) ==
        T::kF32);
}

TEST_CASE("weight presets: mixtures of experts as llama-quantize types them") {
  using T = GgmlType;
  // MXFP4_MOE: expert stacks (3-D) mxfp4, every other converted tensor q8_0, output and
  // token_embd included; a dense model's matrices are all 2-D, so all q8_0.
  CHECK(bench::weight_preset("MXFP4_MOE").file_type == 38);
  CHECK(moe_type_of("mxfp4_moe", "blk.0.ffn_gate_exps.weight", 3) == T::kMXFP4);
  CHECK(moe_type_of("mxfp4_moe", "blk.0.ffn_up_exps.weight", 3) == T::kMXFP4);
  CHECK(moe_type_of("mxfp4_moe", "blk.31.ffn_down_exps.weight", 3, 64, 512) == T::kMXFP4);
  CHECK(moe_type_of("mxfp4_moe", "blk.0.attn_q.weight", 2) == T::kQ8_0);
  CHECK(moe_type_of("mxfp4_moe", "blk.0.attn_v.weight", 2) == T::kQ8_0);
  CHECK(moe_type_of("mxfp4_moe", "output.weight", 2) == T::kQ8_0);
  CHECK(moe_type_of("mxfp4_moe", "token_embd.weight", 2) == T::kQ8_0);
  CHECK(type_of("mxfp4_moe", "blk.3.ffn_down.weight") == T::kQ8_0);
  CHECK(moe_type_of("mxfp4_moe", "blk.0.ffn_down_exps.weight", 3, 64, 48) == T::kF16);
  // The router is never converted (f32 under every preset); norms are 1-D.
  for (const std::string& preset : bench::weight_preset_names())
    CHECK(moe_type_of(preset, "blk.0.ffn_gate_inp.weight", 2) == T::kF32);
  bench::TensorShape router;
  router.row_length = 1024;
  CHECK_FALSE(bench::preset_converts("blk.0.ffn_gate_inp.weight", router));
  router.n_dims = 3;
  CHECK(bench::preset_converts("blk.0.ffn_up_exps.weight", router));
  // ffn_down_exps is an ffn_down: Q4_K_M's use_more_bits, Q3_K_M's first sixteenth.
  CHECK(moe_type_of("q4_K_M", "blk.6.ffn_down_exps.weight", 3) == T::kQ6_K);
  CHECK(moe_type_of("q4_K_M", "blk.4.ffn_down_exps.weight", 3) == T::kQ4_K);
  CHECK(moe_type_of("q4_K_M", "blk.6.ffn_gate_exps.weight", 3) == T::kQ4_K);
  CHECK(moe_type_of("q3_K_M", "blk.1.ffn_down_exps.weight", 3) == T::kQ5_K);
  CHECK(moe_type_of("q2_K", "blk.9.ffn_down_exps.weight", 3) == T::kQ3_K);
  CHECK(moe_type_of("f16", "blk.9.ffn_down_exps.weight", 3) == T::kF16);
  // 8 experts (Mixtral's count): attn_v and attn_k q8_0, attn_output q5_K for the low-bit
  // presets and the base type for the others (q3_K_L's dense raise does not apply).
  CHECK(moe_type_of("q4_K_M", "blk.4.attn_v.weight", 2, 8) == T::kQ8_0);
  CHECK(moe_type_of("q2_K", "blk.4.attn_k.weight", 2, 8) == T::kQ8_0);
  CHECK(moe_type_of("q4_K_M", "blk.4.attn_output.weight", 2, 8) == T::kQ5_K);
  CHECK(moe_type_of("q2_K", "blk.4.attn_output.weight", 2, 8) == T::kQ5_K);
  CHECK(moe_type_of("q3_K_L", "blk.4.attn_output.weight", 2, 8) == T::kQ3_K);
  CHECK(moe_type_of("q4_0", "blk.4.attn_output.weight", 2, 8) == T::kQ4_0);
  // Other expert counts keep the dense rules.
  CHECK(moe_type_of("q4_K_M", "blk.4.attn_v.weight", 2, 64) == T::kQ4_K);
  CHECK(moe_type_of("q4_K_M", "blk.4.attn_k.weight", 2, 64) == T::kQ4_K);
  CHECK(moe_type_of("q2_K", "blk.4.attn_output.weight", 2, 64) == T::kQ3_K);
}

TEST_CASE("weight presets: rows that are not whole blocks fall back as llama-quantize does") {
  using T = GgmlType;
  CHECK(type_of("q4_K_M", "blk.4.attn_q.weight", 704) == T::kQ5_0);
  CHECK(type_of("q4_K_M", "blk.0.attn_v.weight", 704) == T::kQ8_0);  // q6_K
  CHECK(type_of("q5_K_S", "blk.4.attn_q.weight", 64) == T::kQ5_1);
  CHECK(type_of("q2_K", "blk.4.ffn_up.weight", 64) == T::kIQ4_NL);
  CHECK(type_of("q3_K_M", "blk.4.ffn_up.weight", 64) == T::kIQ4_NL);
  CHECK(type_of("iq4_xs", "blk.4.ffn_up.weight", 64) == T::kIQ4_NL);
  CHECK(type_of("q4_K_M", "output.weight", 48) == T::kF16);  // q8_0 would not fit either
  CHECK(type_of("q4_0", "blk.0.attn_q.weight", 48) == T::kF16);
  CHECK(type_of("f16", "blk.0.attn_q.weight", 48) == T::kF16);
}

TEST_CASE("weight presets: names, case and unknown names") {
  CHECK(bench::weight_preset_names().size() == 20);
  CHECK(bench::weight_preset("q4_k_m").name == "q4_K_M");
  CHECK(bench::weight_preset("Q4_K_M").file_type == 15);
  CHECK(bench::weight_preset("iq4_xs").file_type == 30);
  CHECK_THROWS_WITH_AS(bench::weight_preset("q4_K"),
                       doctest::Contains("weight type 'q4_K' is not one of f32, f16"), UsageError);
}

namespace {

// Of 16 greedy tokens after "def" from the constructed model at `path`, how many follow its
// planted map.
int tokens_following_map(const std::string& path, const bench::ConstructedSpec& spec,
                         PluginRegistry& registry) {
  const Config config = parse_config(
      "", "presets.toml",
      {"target.model=\"" + path + "\"", "engine.backend=cpu", "engine.threads=1",
       "sampling.temperature=0", "sampling.ignore_eos=true", "sampling.max_tokens=16"});
  Engine engine(config, registry);
  const GenerationResult r = engine.generate("def");
  REQUIRE(r.tokens.size() == 16);
  const std::vector<int32_t> next = bench::constructed_next(spec);
  int32_t prev = engine.tokenizer().encode("def", true).back();
  int followed = 0;
  for (int32_t t : r.tokens) {
    followed += t == next[prev];
    prev = t;
  }
  return followed;
}

}  // namespace

TEST_CASE(
    "every preset's constructed model loads and generates; at 4 bits and more it walks "
    "the planted map") {
  const std::string dir = test::temp_dir("bench-presets");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  for (const std::string& preset : bench::weight_preset_names()) {
    CAPTURE(preset);
    bench::ConstructedSpec spec = bench::constructed_preset("tiny");  // rows of 256 and 512
    spec.weights = preset;
    const std::string path = dir + "/" + preset + ".gguf";
    bench::write_constructed_model(path, spec);
    CHECK(GgufFile::open(path).get_u32("general.file_type") ==
          bench::weight_preset(preset).file_type);
    const int followed = tokens_following_map(path, spec, registry);
    MESSAGE(preset << ": " << followed << "/16 tokens follow the map");
    CHECK(followed == 16);  // the planted logit's margin survives even q2_K
  }
}

TEST_CASE("every preset's constructed qwen3moe and gpt-oss loads and walks the planted map") {
  // Expert stacks of rows 256 (gate, up) and 128 (down: every 256-block type falls back).
  const std::string dir = test::temp_dir("bench-presets-moe");
  PluginRegistry registry{{SPECD_TEST_PLUGIN_DIR}};
  for (const std::string& preset : bench::weight_preset_names())
    for (const std::string arch : {"qwen3moe", "gpt-oss"}) {
      CAPTURE(preset);
      CAPTURE(arch);
      bench::ConstructedSpec spec = bench::constructed_preset("tiny", arch);
      spec.weights = preset;
      const std::string path = dir + "/" + arch + "-" + preset + ".gguf";
      bench::write_constructed_model(path, spec);
      const GgufFile file = GgufFile::open(path);
      CHECK(file.require_tensor("blk.0.ffn_gate_inp.weight").type == GgmlType::kF32);
      CHECK(file.require_tensor("blk.0.ffn_up_exps.weight").type ==
            bench::constructed_tensor_type(spec, "blk.0.ffn_up_exps.weight", 256, 3));
      CHECK(tokens_following_map(path, spec, registry) == 16);
    }
}
