// Small GGUF vocabularies built by the tests: a byte-level BPE (GPT-2 style) and a
// SentencePiece-style one, written to scratch files and loaded like real models.
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf_reader.hpp"
#include "scratch_dir.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"
#include "writers/gguf_writer.hpp"

namespace specd::test {

inline std::string tok_scratch(const std::string& name) {
  static const ScratchDir scratch("specd_tokenizer_test_");  // removed when the program exits
  return scratch.file(name);
}

inline std::string gpt2_mapped(std::string_view bytes) {
  std::string s;
  for (char c : bytes) utf8_append(s, gpt2_byte_to_codepoint(static_cast<uint8_t>(c)));
  return s;
}

struct BpeSpec {
  std::vector<std::string> tokens;  // mapped text
  std::vector<int32_t> types;
  std::vector<std::string> merges;
};

// 256 byte tokens in byte order, then one token per merge (in mapped text) except merges
// listed in `no_token`, then the special tokens.
inline BpeSpec bpe_spec() {
  BpeSpec s;
  for (int b = 0; b < 256; ++b) {
    s.tokens.push_back(gpt2_mapped(std::string(1, static_cast<char>(b))));
    s.types.push_back(1);
  }
  // Merges in raw bytes; the fixture stores them in GPT-2's mapped form.
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"},  {"l", "l"},   {"he", "ll"},        {"hell", "o"},  {" ", "w"},
      {"o", "r"},  {" w", "or"}, {" wor", "l"},       {" worl", "d"}, {"t", "h"},
      {" ", "t"},  {" t", "he"}, {"1", "2"},          {"12", "3"},    {"i", "n"},
      {"in", "g"}, {" ", " "},   {"\n", "\n"},        {"x", "y"},     {"\xc3", "\xa9"},
      {"c", "a"},  {"ca", "f"},  {"caf", "\xc3\xa9"}, {"'", "s"},
  };
  for (const auto& [l, r] : merges) {
    s.merges.push_back(gpt2_mapped(l) + " " + gpt2_mapped(r));
    if (l == "x") continue;  // a merge whose result is not a token
    const std::string t = gpt2_mapped(l + r);
    bool have = false;
    for (const auto& e : s.tokens) have |= e == t;
    if (!have) {
      s.tokens.push_back(t);
      s.types.push_back(1);
    }
  }
  s.tokens.push_back("<|endoftext|>");
  s.types.push_back(3);
  s.tokens.push_back("<|user|>");
  s.types.push_back(4);
  return s;
}

inline int32_t id_of(const Tokenizer& t, const std::string& text) {
  for (int32_t k = 0; k < t.n_tokens(); ++k) {
    if (t.vocab().text[k] == text) return k;
  }
  return -1;
}

// A llama file's writer whose vocabulary is of tokenizer model `model`.
inline GgufWriter vocabulary_writer(const std::string& model) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("tokenizer.ggml.model", model);
  return w;
}

// Writes `w`, first changed by `tweak` where one is given, to scratch file `name`; returns its
// path.
inline std::string write_tweaked(GgufWriter& w, const std::function<void(GgufWriter&)>& tweak,
                                 const std::string& name) {
  if (tweak) tweak(w);
  const std::string path = tok_scratch(name);
  w.write(path);
  return path;
}

inline std::string write_bpe(const std::string& name,
                             const std::function<void(GgufWriter&)>& tweak = {}) {
  const BpeSpec s = bpe_spec();
  GgufWriter w = vocabulary_writer("gpt2");
  w.set_string("tokenizer.ggml.pre", "gpt-2");
  w.set("tokenizer.ggml.tokens", GgufValue::string_array(s.tokens));
  w.set("tokenizer.ggml.token_type", GgufValue::int32_array(s.types));
  w.set("tokenizer.ggml.merges", GgufValue::string_array(s.merges));
  w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(s.tokens.size() - 2));
  w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(s.tokens.size() - 2));
  return write_tweaked(w, tweak, name);
}

// A text of fewer than `max_pieces` pieces, each drawn from `alphabet`.
inline std::string random_text(std::mt19937& rng, const std::vector<std::string>& alphabet,
                               size_t max_pieces) {
  std::string s;
  const size_t n = rng() % max_pieces;
  for (size_t k = 0; k < n; ++k) s += alphabet[rng() % alphabet.size()];
  return s;
}

inline Tokenizer load(const std::string& path) {
  return Tokenizer::from_gguf(GgufFile::open(path));
}

struct SpmSpec {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
};

inline SpmSpec spm_spec() {
  SpmSpec s;
  auto add = [&](const std::string& t, float score, int32_t type) {
    s.tokens.push_back(t);
    s.scores.push_back(score);
    s.types.push_back(type);
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    add(name, 0, 6);
  }
  const std::string sp = "\xe2\x96\x81";
  for (const char* c : {"h", "e", "l", "o", "w", "r", "d", "a", "b"}) add(c, -10, 1);
  add(sp, -10, 1);
  add(sp + "h", -1, 1);
  add(sp + "he", -2.5f, 1);
  add("ll", -2, 1);
  add(sp + "hell", -3, 1);
  add(sp + "hello", -4, 1);
  add(sp + "w", -1.5f, 1);
  add("or", -2, 1);
  add(sp + "wor", -3.5f, 1);
  add("ld", -5, 1);
  add(sp + "world", -6, 1);
  add("ab", -1, 1);
  add("ba", -1, 1);
  add("<user>", 0, 4);
  return s;
}

inline std::string write_spm(const std::string& name,
                             const std::function<void(GgufWriter&)>& tweak = {}) {
  const SpmSpec s = spm_spec();
  GgufWriter w = vocabulary_writer("llama");
  w.set("tokenizer.ggml.tokens", GgufValue::string_array(s.tokens));
  w.set("tokenizer.ggml.scores", GgufValue::float32_array(s.scores));
  w.set("tokenizer.ggml.token_type", GgufValue::int32_array(s.types));
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  return write_tweaked(w, tweak, name);
}

}  // namespace specd::test
