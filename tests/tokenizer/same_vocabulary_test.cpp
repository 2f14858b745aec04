#include <doctest/doctest.h>

#include "tokenizer_fixtures.hpp"

using namespace specd;

namespace {

std::string write_bpe_with_extra(const std::string& name, const std::vector<std::string>& extra,
                                 int32_t extra_type, const std::string& replace_token = {}) {
  return test::write_bpe(name, [&](GgufWriter& w) {
    test::BpeSpec s = test::bpe_spec();
    if (!replace_token.empty()) s.tokens.at(270) = replace_token;
    for (const auto& e : extra) {
      s.tokens.push_back(e);
      s.types.push_back(extra_type);
    }
    w.set("tokenizer.ggml.tokens", GgufValue::string_array(s.tokens));
    w.set("tokenizer.ggml.token_type", GgufValue::int32_array(s.types));
  });
}

}  // namespace

TEST_CASE("same_vocabulary accepts identical and padded vocabularies") {
  const Tokenizer a = test::load(test::write_bpe("va.gguf"));
  const Tokenizer b = test::load(test::write_bpe("vb.gguf"));
  std::string why = "unset";
  CHECK(same_vocabulary(a, b, &why));
  CHECK(why.empty());

  const Tokenizer padded_control =
      test::load(write_bpe_with_extra("vpad1.gguf", {"<extra_0>", "<extra_1>"}, 3));
  CHECK(same_vocabulary(a, padded_control, &why));
  CHECK(same_vocabulary(padded_control, a, &why));
  const Tokenizer padded_names =
      test::load(write_bpe_with_extra("vpad2.gguf", {"[PAD0]", "[PAD1]", "<pad_2>"}, 1));
  CHECK(same_vocabulary(a, padded_names, &why));
  const Tokenizer padded_unused = test::load(write_bpe_with_extra("vpad3.gguf", {"zz"}, 5));
  CHECK(same_vocabulary(a, padded_unused));
}

TEST_CASE("same_vocabulary rejects real differences and says why") {
  const Tokenizer a = test::load(test::write_bpe("va.gguf"));
  std::string why;
  const Tokenizer extra_word = test::load(write_bpe_with_extra("vx.gguf", {"zebra"}, 1));
  CHECK(!same_vocabulary(a, extra_word, &why));
  CHECK(why.find("'zebra'") != std::string::npos);

  const Tokenizer changed = test::load(write_bpe_with_extra("vc.gguf", {}, 1, "qq"));
  CHECK(!same_vocabulary(a, changed, &why));
  CHECK(why.find("token 270") != std::string::npos);

  const Tokenizer spm = test::load(test::write_spm("spm.gguf"));
  CHECK(!same_vocabulary(a, spm, &why));
  CHECK(why.find("models differ") != std::string::npos);

  const Tokenizer other_eos = test::load(test::write_bpe(
      "ve.gguf", [](GgufWriter& w) { w.set_u32("tokenizer.ggml.eos_token_id", 5); }));
  CHECK(!same_vocabulary(a, other_eos, &why));
  CHECK(why.find("eos") != std::string::npos);
}
