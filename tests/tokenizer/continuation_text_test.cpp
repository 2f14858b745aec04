// The real `specd run` on small random llama models, one with a SentencePiece vocabulary and
// one with a byte-level BPE one: the streamed text and the --json "text" are the same, and both
// equal decode(prompt + generated) minus decode(prompt) (invalid UTF-8 shown as U+FFFD), the
// leading space of the first generated word included.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli_runner.hpp"
#include "gguf/gguf_reader.hpp"
#include "random_llama.hpp"
#include "test_paths.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"
#include "writers/gguf_writer.hpp"
#include "writers/llama_writer.hpp"

using namespace specd;

namespace {

const std::string kSp = "\xe2\x96\x81";

// A random-weight llama whose SentencePiece vocabulary is <unk> <s> </s>, the 256 byte
// tokens, then whole words. Only the words and five byte tokens (those of "é" and "你") have
// output rows, so that greedy decoding emits words with their leading space and, now and
// then, characters split over byte tokens.
void write_spm_llama(const std::string& path) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(name);
    types.push_back(6);
  }
  const size_t first_word = tokens.size();
  for (const char* w : {"Hello", "world",       "this",
                        "is",    "a",           "test",
                        "Henri", "caf\xc3\xa9", "\xe4\xbd\xa0\xe5\xa5\xbd",
                        "the",   "of",          "and",
                        "to",    "in",          "it",
                        "was",   "he",          "for",
                        "on",    "are",         "as",
                        "with",  "his",         "they",
                        "at",    "be"}) {
    tokens.push_back(kSp + w);
    types.push_back(1);
  }
  for (const char* w : {",", ".", "ing", "ed", "s", "\xc3\xa9"}) {
    tokens.push_back(w);
    types.push_back(1);
  }
  tokens.push_back(kSp);
  types.push_back(1);
  std::vector<float> scores(tokens.size());
  for (size_t k = 0; k < scores.size(); ++k) scores[k] = -static_cast<float>(k);

  LlamaLayout layout;
  layout.name = "spm-llama";
  layout.vocab = static_cast<uint32_t>(tokens.size());
  GgufWriter w;
  set_llama_metadata(w, layout);
  w.set_u32("general.file_type", 0);
  w.set_string("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", GgufValue::string_array(tokens));
  w.set("tokenizer.ggml.scores", GgufValue::float32_array(scores));
  w.set("tokenizer.ggml.token_type", GgufValue::int32_array(types));
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  auto emitted = [&](size_t id) {
    return id >= first_word || id == 3 + 0xC3 || id == 3 + 0xA9 || id == 3 + 0xE4 ||
           id == 3 + 0xBD || id == 3 + 0xA0;
  };
  std::mt19937_64 rng(10);
  std::normal_distribution<float> normal(0.0f, 0.08f);
  for (const LlamaTensor& t : llama_tensors(layout)) {
    size_t n = 1;
    for (int64_t e : t.ne) n *= static_cast<size_t>(e);
    std::vector<float> v(n);
    const bool norm = t.role == LlamaTensorRole::kNorm;
    for (float& x : v) x = (norm ? 1.0f : 0.0f) + normal(rng);
    if (t.role == LlamaTensorRole::kOutput) {
      const size_t row = static_cast<size_t>(t.ne[0]);
      for (size_t id = 0; id < layout.vocab; ++id) {
        if (!emitted(id)) std::fill(v.begin() + id * row, v.begin() + (id + 1) * row, 0.0f);
      }
    }
    w.add_tensor_f32(t.name, GgmlType::kF32, t.ne, v.data());
  }
  w.write(path);
}

std::string write_config(const std::string& dir, const std::string& model, int max_tokens) {
  const std::string path =
      dir + "/" + std::to_string(max_tokens) + "-" + model.substr(model.rfind('/') + 1) + ".toml";
  std::ofstream(path) << "[engine]\nbackend = \"cpu\"\nthreads = 1\n\n[target]\nmodel = \"" << model
                      << "\"\n\n[sampling]\ntemperature = 0.0\nmax_tokens = " << max_tokens
                      << "\nignore_eos = true\n";
  return path;
}

// The "text" string and "tokens" array of specd's --json output.
struct JsonRun {
  std::string text;
  std::vector<int32_t> tokens;
};

uint32_t hex4(const std::string& s, size_t at) {
  REQUIRE(at + 4 <= s.size());
  return static_cast<uint32_t>(std::stoul(s.substr(at, 4), nullptr, 16));
}

// The character a one-letter JSON escape stands for ('"', '\\' and '/' stand for themselves).
char unescaped(char letter) {
  const std::string_view letters = "ntrbf", chars = "\n\t\r\b\f";
  const size_t at = letters.find(letter);
  return at == std::string_view::npos ? letter : chars[at];
}

JsonRun parse_run_json(const std::string& json) {
  JsonRun r;
  const std::string text_key = "\"text\":\"";
  size_t i = json.find(text_key);
  REQUIRE(i != std::string::npos);
  for (i += text_key.size(); i < json.size() && json[i] != '"'; ++i) {
    if (json[i] != '\\') {
      r.text += json[i];
      continue;
    }
    const char e = json.at(++i);
    if (e == 'u') {
      utf8_append(r.text, hex4(json, i + 1));
      i += 4;
    } else {
      r.text += unescaped(e);
    }
  }
  const std::string tokens_key = "\"tokens\":[";
  size_t t = json.find(tokens_key, i);
  REQUIRE(t != std::string::npos);
  t += tokens_key.size();
  while (json.at(t) != ']') {
    size_t used = 0;
    r.tokens.push_back(std::stoi(json.substr(t), &used));
    t += used;
    if (json.at(t) == ',') ++t;
  }
  return r;
}

// Invalid UTF-8 bytes each shown as U+FFFD, as specd prints them.
std::string shown(const std::string& bytes) {
  std::string out;
  for (size_t pos = 0; pos < bytes.size();) {
    const Utf8Unit u = utf8_next(bytes, pos);
    if (u.valid) {
      out.append(bytes, pos, u.len);
      pos += u.len;
    } else {
      out += "\xef\xbf\xbd";
      ++pos;
    }
  }
  return out;
}

// Runs the CLI streaming and with --json; returns the expected continuation text.
std::string check_cli(const std::string& model, const std::string& config,
                      const std::string& prompt) {
  const test::CliResult streamed =
      test::run_program({SPECD_CLI, "run", "-c", config, "-p", prompt});
  INFO("stderr: " << streamed.err);
  REQUIRE(streamed.status == 0);
  const test::CliResult json =
      test::run_program({SPECD_CLI, "run", "-c", config, "-p", prompt, "--json"});
  INFO("stderr: " << json.err);
  REQUIRE(json.status == 0);
  const JsonRun run = parse_run_json(json.out);
  REQUIRE(!run.tokens.empty());

  const Tokenizer tok = Tokenizer::from_gguf(GgufFile::open(model));
  std::vector<int32_t> all = tok.encode(prompt, true);
  const std::string before = tok.decode(all);
  all.insert(all.end(), run.tokens.begin(), run.tokens.end());
  const std::string after = tok.decode(all);
  REQUIRE(after.compare(0, before.size(), before) == 0);
  const std::string expected = shown(after.substr(before.size()));
  CHECK(run.text == expected);
  CHECK(streamed.out == run.text + "\n");
  return expected;
}

}  // namespace

TEST_CASE("specd run: SentencePiece continuation keeps its leading space, streamed and --json") {
  const std::string dir = test::temp_dir("continuation-spm");
  const std::string model = dir + "/spm-llama.gguf";
  write_spm_llama(model);
  for (int n : {1, 16}) {
    CAPTURE(n);
    const std::string text =
        check_cli(model, write_config(dir, model, n), "Hello world, this is a test");
    // Every emitted token is a word with its space, a suffix or one of the five byte tokens;
    // with this model (weights from seed 10) the first one is " on", printed with its space as
    // llama.cpp prints it.
    REQUIRE(!text.empty());
    CHECK(text[0] == ' ');
  }
}

TEST_CASE("specd run: byte-level BPE continuation, streamed and --json") {
  const std::string dir = test::temp_dir("continuation-bpe");
  const std::string model = dir + "/bpe-llama.gguf";
  test::RandomLlamaSpec spec;
  spec.seed = 3;
  test::write_random_llama(model, spec);
  // Random byte tokens: characters split over tokens, and bytes that never form one.
  check_cli(model, write_config(dir, model, 24), "caf\xc3\xa9 \xe4\xbd\xa0");
}
