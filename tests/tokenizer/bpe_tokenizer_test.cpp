#include <doctest/doctest.h>

#include <map>
#include <random>

#include "common/error.hpp"
#include "tokenizer/pretokenizer.hpp"
#include "tokenizer_fixtures.hpp"

using namespace specd;
using test::gpt2_mapped;
using test::id_of;

namespace {

// Straightforward BPE: repeatedly merge the lowest-ranked adjacent pair (leftmost on ties).
std::vector<int32_t> reference_bpe(const Tokenizer& tok, const std::string& text) {
  static const std::map<std::string, int> rank = [] {
    std::map<std::string, int> r;
    const auto merges = test::bpe_spec().merges;
    for (size_t k = 0; k < merges.size(); ++k) r[merges[k]] = static_cast<int>(k);
    return r;
  }();
  std::map<std::string, int32_t> ids;
  for (int32_t k = 0; k < tok.n_tokens(); ++k) ids[tok.vocab().text[k]] = k;
  auto id_of = [&](const std::string& s) {
    auto it = ids.find(s);
    return it == ids.end() ? -1 : it->second;
  };
  std::vector<int32_t> out;
  for (auto word : pretokenize_gpt2(text)) {
    std::vector<std::string> sym;
    for (char c : word) sym.emplace_back(1, c);
    while (true) {
      int best = -1, best_rank = 1 << 30;
      for (size_t k = 0; k + 1 < sym.size(); ++k) {
        auto it = rank.find(gpt2_mapped(sym[k]) + " " + gpt2_mapped(sym[k + 1]));
        if (it != rank.end() && it->second < best_rank) {
          best_rank = it->second;
          best = static_cast<int>(k);
        }
      }
      if (best < 0) break;
      sym[best] += sym[best + 1];
      sym.erase(sym.begin() + best + 1);
    }
    for (const auto& s : sym) {
      const int32_t id = id_of(gpt2_mapped(s));
      if (id >= 0) {
        out.push_back(id);
      } else {
        for (char c : s) out.push_back(id_of(gpt2_mapped(std::string(1, c))));
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("bpe vocabulary loads with llama.cpp defaults") {
  const Tokenizer tok = test::load(test::write_bpe("bpe.gguf"));
  CHECK(tok.model() == TokenizerModel::kBpe);
  CHECK(tok.pre_tokenizer() == PreTokenizer::kGpt2);
  CHECK(!tok.add_bos());
  CHECK(!tok.add_eos());
  CHECK(!tok.add_space_prefix());
  CHECK(tok.bos_id() == id_of(tok, "<|endoftext|>"));
  CHECK(tok.unk_id() == -1);
  CHECK(tok.is_control(tok.eos_id()));
}

TEST_CASE("bpe encodes known answers by merge rank") {
  const Tokenizer tok = test::load(test::write_bpe("bpe.gguf"));
  using V = std::vector<int32_t>;
  CHECK(tok.encode("hello world") == V{id_of(tok, "hello"), id_of(tok, gpt2_mapped(" world"))});
  // "h e" outranks "t h", so "the" becomes t + he, while " the" merges fully.
  CHECK(tok.encode("the") == V{id_of(tok, "t"), id_of(tok, "he")});
  CHECK(tok.encode(" the") == V{id_of(tok, gpt2_mapped(" the"))});
  CHECK(tok.encode("123") == V{id_of(tok, "123")});
  // "x y" is a merge without a token: the result is spelled with byte tokens.
  CHECK(tok.encode("xy") == V{id_of(tok, "x"), id_of(tok, "y")});
  CHECK(tok.encode("caf\xc3\xa9") == V{id_of(tok, gpt2_mapped("caf\xc3\xa9"))});
  CHECK(tok.encode("hello's") == V{id_of(tok, "hello"), id_of(tok, "'s")});
  // Three spaces before a word: "  " then " w..." per the pre-tokenizer.
  CHECK(tok.encode("a   world") ==
        V{id_of(tok, "a"), id_of(tok, gpt2_mapped("  ")), id_of(tok, gpt2_mapped(" world"))});
  CHECK(tok.encode("").empty());
}

TEST_CASE("bpe matches a reference implementation on random text") {
  const Tokenizer tok = test::load(test::write_bpe("bpe.gguf"));
  const std::vector<std::string> alphabet = {"h",  "e", "l", "o",        "w",
                                             "r",  "d", "t", "1",        "2",
                                             "3",  "i", "n", "g",        " ",
                                             "\n", "x", "y", "'",        "s",
                                             "c",  "a", "f", "\xc3\xa9", "\xe2\x82\xac",
                                             "\t"};
  std::mt19937 rng(99);
  for (int iter = 0; iter < 1500; ++iter) {
    const std::string s = test::random_text(rng, alphabet, 20);
    CAPTURE(s);
    const auto ids = tok.encode(s);
    CHECK(ids == reference_bpe(tok, s));
    CHECK(tok.decode(ids) == s);
  }
}

TEST_CASE("bpe round trips arbitrary bytes, including invalid utf-8") {
  const Tokenizer tok = test::load(test::write_bpe("bpe.gguf"));
  std::mt19937 rng(5);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s;
    const size_t n = rng() % 40;
    for (size_t k = 0; k < n; ++k) s += static_cast<char>(rng() & 0xff);
    const auto ids = tok.encode(s);
    for (int32_t id : ids) CHECK(!tok.is_control(id));
    if (tok.decode(ids) != s) FAIL("round trip failed for a " << s.size() << "-byte string");
  }
  const std::string mixed = "na\xc3\xafve \xf0\x9f\x91\x8b \xff\xc3 end\xe2\x82";
  CHECK(tok.decode(tok.encode(mixed)) == mixed);
}

TEST_CASE("bpe special tokens") {
  const Tokenizer tok = test::load(test::write_bpe("bpe.gguf"));
  const int32_t eot = id_of(tok, "<|endoftext|>");
  const int32_t user = id_of(tok, "<|user|>");
  const std::string text = "hello<|endoftext|> world<|user|>the";
  // Control tokens only come from text when asked; user-defined ones always do.
  const auto plain = tok.encode(text);
  CHECK(std::find(plain.begin(), plain.end(), eot) == plain.end());
  CHECK(std::find(plain.begin(), plain.end(), user) != plain.end());
  CHECK(tok.decode(plain) == text);
  const auto parsed = tok.encode(text, true, true);
  CHECK(parsed == std::vector<int32_t>{id_of(tok, "hello"), eot, id_of(tok, gpt2_mapped(" world")),
                                       user, id_of(tok, "t"), id_of(tok, "he")});
  CHECK(tok.decode(parsed) == "hello world<|user|>the");
  CHECK(tok.decode(parsed, true) == text);
  CHECK(tok.token_to_piece(eot).empty());
  CHECK(tok.token_to_piece(eot, true) == "<|endoftext|>");
}

TEST_CASE("bpe add_bos / add_eos keys") {
  const Tokenizer tok = test::load(test::write_bpe("bpe_bos.gguf", [](GgufWriter& w) {
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_bool("tokenizer.ggml.add_eos_token", true);
  }));
  const auto ids = tok.encode("the");
  REQUIRE(ids.size() == 4);
  CHECK(ids.front() == tok.bos_id());
  CHECK(ids.back() == tok.eos_id());
  CHECK(tok.encode("the", false).size() == 2);
  CHECK(tok.decode(ids) == "the");
}

TEST_CASE("bpe with the llama3 pre-tokenizer emits whole-word tokens first") {
  auto with_the = [](const std::string& pre) {
    return [pre](GgufWriter& w) {
      test::BpeSpec s = test::bpe_spec();
      s.tokens.push_back("the");
      s.types.push_back(1);
      w.set("tokenizer.ggml.tokens", GgufValue::string_array(s.tokens));
      w.set("tokenizer.ggml.token_type", GgufValue::int32_array(s.types));
      w.set_string("tokenizer.ggml.pre", pre);
    };
  };
  const Tokenizer llama3 = test::load(test::write_bpe("bpe_llama3.gguf", with_the("llama-bpe")));
  CHECK(llama3.pre_tokenizer() == PreTokenizer::kLlama3);
  CHECK(llama3.add_bos());
  CHECK(llama3.encode("the", false) == std::vector<int32_t>{id_of(llama3, "the")});
  CHECK(llama3.encode("12345", false) ==
        std::vector<int32_t>{id_of(llama3, "123"), id_of(llama3, "4"), id_of(llama3, "5")});
  const Tokenizer qwen2 = test::load(test::write_bpe("bpe_qwen2.gguf", with_the("qwen2")));
  CHECK(qwen2.pre_tokenizer() == PreTokenizer::kQwen2);
  CHECK(!qwen2.add_bos());
  CHECK(qwen2.encode("the") == std::vector<int32_t>{id_of(qwen2, "t"), id_of(qwen2, "he")});
  CHECK(qwen2.encode("123").size() == 3);
  const Tokenizer gpt2 = test::load(test::write_bpe("bpe_gpt2.gguf", with_the("gpt-2")));
  CHECK(gpt2.encode("the") == std::vector<int32_t>{id_of(gpt2, "t"), id_of(gpt2, "he")});
}

TEST_CASE("bpe duplicated token strings map to the last id") {
  const Tokenizer tok = test::load(test::write_bpe("bpe_dup.gguf", [](GgufWriter& w) {
    test::BpeSpec s = test::bpe_spec();
    s.tokens.push_back("hello");
    s.types.push_back(1);
    w.set("tokenizer.ggml.tokens", GgufValue::string_array(s.tokens));
    w.set("tokenizer.ggml.token_type", GgufValue::int32_array(s.types));
  }));
  CHECK(tok.encode("hello") == std::vector<int32_t>{tok.n_tokens() - 1});
}

TEST_CASE("tokenizer metadata errors name the file") {
  auto expect = [](const std::function<void(GgufWriter&)>& tweak, const std::string& what) {
    const std::string path = test::write_bpe("bad_tok.gguf", tweak);
    CHECK_THROWS_WITH_AS(test::load(path), doctest::Contains((path + ": ").c_str()), Error);
    CHECK_THROWS_WITH_AS(test::load(path), doctest::Contains(what.c_str()), Error);
  };
  expect([](GgufWriter& w) { w.set_string("tokenizer.ggml.model", "bert"); },
         "unsupported tokenizer.ggml.model 'bert'");
  expect([](GgufWriter& w) { w.set_string("tokenizer.ggml.pre", "mystery"); },
         "unsupported tokenizer.ggml.pre 'mystery'");
  expect([](GgufWriter& w) { w.set("tokenizer.ggml.tokens", GgufValue::int32_array({1})); },
         "key 'tokenizer.ggml.tokens' has type array[int32], expected array[string]");
  expect([](GgufWriter& w) { w.set("tokenizer.ggml.tokens", GgufValue::string_array({})); },
         "tokenizer.ggml.tokens is empty");
  expect([](GgufWriter& w) { w.set("tokenizer.ggml.token_type", GgufValue::int32_array({1})); },
         "tokenizer.ggml.token_type has 1 entries");
  expect([](GgufWriter& w) { w.set("tokenizer.ggml.merges", GgufValue::string_array({"ab"})); },
         "tokenizer.ggml.merges[0] = 'ab' is not two tokens");
  expect([](GgufWriter& w) { w.set_u32("tokenizer.ggml.eos_token_id", 100000); },
         "tokenizer.ggml.eos_token_id = 100000 is outside");
  expect([](GgufWriter& w) { w.set_string("tokenizer.ggml.bos_token_id", "1"); },
         "has type string, expected int64");
  expect(
      [](GgufWriter& w) {
        w.set("tokenizer.ggml.token_type",
              GgufValue::int32_array(std::vector<int32_t>(test::bpe_spec().tokens.size(), 9)));
      },
      "is not a known token type");
}
