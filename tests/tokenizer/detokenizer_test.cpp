#include <doctest/doctest.h>

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "test_paths.hpp"
#include "test_skip.hpp"
#include "tokenizer/unicode.hpp"
#include "tokenizer_fixtures.hpp"

using namespace specd;
using test::gpt2_mapped;
using test::id_of;

TEST_CASE("streaming detokenizer holds back split characters") {
  const Tokenizer tok = test::load(test::write_bpe("bpe.gguf"));
  // "é" is two byte tokens; "€" is three.
  const int32_t c3 = id_of(tok, gpt2_mapped("\xc3"));
  const int32_t a9 = id_of(tok, gpt2_mapped("\xa9"));
  const int32_t e2 = id_of(tok, gpt2_mapped("\xe2"));
  const int32_t x82 = id_of(tok, gpt2_mapped("\x82"));
  const int32_t xac = id_of(tok, gpt2_mapped("\xac"));
  StreamingDetokenizer d(tok);
  CHECK(d.push(id_of(tok, "hello")) == "hello");
  CHECK(d.push(c3).empty());
  CHECK(d.push(a9) == "\xc3\xa9");
  CHECK(d.push(e2).empty());
  CHECK(d.push(x82).empty());
  CHECK(d.push(xac) == "\xe2\x82\xac");
  CHECK(d.push(tok.eos_id()).empty());  // control tokens print nothing
  // A byte that can never start a character is shown as U+FFFD at once.
  CHECK(d.push(id_of(tok, gpt2_mapped("\xff"))) == "\xef\xbf\xbd");
  // An incomplete sequence followed by something else is replaced, the rest printed.
  CHECK(d.push(e2).empty());
  CHECK(d.push(id_of(tok, "a")) ==
        "\xef\xbf\xbd"
        "a");
  CHECK(d.push(c3).empty());
  CHECK(d.flush() == "\xef\xbf\xbd");
  CHECK(d.flush().empty());
}

TEST_CASE("streaming detokenizer output equals decode for valid text") {
  const Tokenizer bpe = test::load(test::write_bpe("bpe.gguf"));
  const Tokenizer spm = test::load(test::write_spm("spm.gguf"));
  for (const Tokenizer* tok : {&bpe, &spm}) {
    const std::string text = "hello world caf\xc3\xa9 \xe4\xb8\xad\xf0\x9f\x91\x8b the";
    const auto ids = tok->encode(text);
    StreamingDetokenizer d(*tok);
    std::string streamed;
    for (int32_t id : ids) streamed += d.push(id);
    streamed += d.flush();
    CHECK(streamed == text);
    CHECK(tok->decode(ids) == text);
  }
}

namespace {

bool valid_utf8(const std::string& s) {
  for (size_t pos = 0; pos < s.size();) {
    const Utf8Unit u = utf8_next(s, pos);
    if (!u.valid) return false;
    pos += u.len;
  }
  return true;
}

// Every split of encode(text) into a context and a stream, the context ending on a character
// boundary: the stream's text is decode(all) minus decode(context).
void check_continuations(const Tokenizer& tok, const std::string& text) {
  const std::vector<int32_t> ids = tok.encode(text);
  const std::string all = tok.decode(ids);
  for (size_t k = 0; k <= ids.size(); ++k) {
    const std::span<const int32_t> context(ids.data(), k);
    const std::string before = tok.decode(context);
    if (!valid_utf8(before)) continue;
    CAPTURE(text);
    CAPTURE(k);
    REQUIRE(all.compare(0, before.size(), before) == 0);
    StreamingDetokenizer d(tok, false, context);
    std::string streamed;
    for (size_t j = k; j < ids.size(); ++j) streamed += d.push(ids[j]);
    streamed += d.flush();
    CHECK(streamed == all.substr(before.size()));
  }
}

}  // namespace

TEST_CASE("streaming detokenizer continues a context: leading spaces kept after text") {
  const Tokenizer spm = test::load(test::write_spm("spm.gguf"));
  const int32_t hello = id_of(spm, "\xe2\x96\x81hello");
  const int32_t world = id_of(spm, "\xe2\x96\x81world");
  // After a prompt with text, " world" keeps its space (llama.cpp prints " world" too).
  const std::vector<int32_t> prompt = {spm.bos_id(), hello};
  StreamingDetokenizer after_text(spm, false, prompt);
  CHECK(after_text.push(world) == " world");
  // After BOS alone the stream is the start of the text: its first space is the prefix.
  const std::vector<int32_t> bos = {spm.bos_id()};
  StreamingDetokenizer after_bos(spm, false, bos);
  CHECK(after_bos.push(world) == "world");
  CHECK(after_bos.push(hello) == " hello");
  // A BPE vocabulary has no space prefix to strip.
  const Tokenizer bpe = test::load(test::write_bpe("bpe.gguf"));
  StreamingDetokenizer bpe_start(bpe);
  const auto space_hello = bpe.encode(" hello", false);
  std::string streamed;
  for (int32_t id : space_hello) streamed += bpe_start.push(id);
  CHECK(streamed == " hello");
}

TEST_CASE("streaming detokenizer continuation equals decode(all) minus decode(context)") {
  const Tokenizer bpe = test::load(test::write_bpe("bpe.gguf"));
  const Tokenizer spm = test::load(test::write_spm("spm.gguf"));
  for (const Tokenizer* tok : {&bpe, &spm}) {
    for (const char* text :
         {"hello world", " hello  world ", "caf\xc3\xa9 \xe4\xb8\xad\xf0\x9f\x91\x8b",
          "\xe2\x82\xac\xe2\x82\xac", "hello<user> world", ""}) {
      check_continuations(*tok, text);
    }
  }
}

TEST_CASE("streaming detokenizer on llama.cpp's SentencePiece vocabularies" * SPECD_MAY_SKIP) {
  const auto dir = std::filesystem::path(SPECD_SOURCE_DIR) / ".." / "shared" / "compat" / "vocab";
  if (!std::filesystem::exists(dir)) {
    ::specd::test::skip_missing(dir.string(), " is missing (llama.cpp reference data)");
    return;
  }
  for (const char* name : {"llama-spm", "phi-3", "gpt-2", "deepseek-coder"}) {
    CAPTURE(name);
    const Tokenizer tok =
        test::load((dir / ("ggml-vocab-" + std::string(name) + ".gguf")).string());
    // Characters outside the vocabulary come as byte tokens split over several ids.
    for (const char* text : {"Hello world, this is a test Henri",
                             "  leading spaces and \xf0\x9f\xa6\x99\xf0\x9f\xa6\x99 llamas",
                             "\xe1\x84\x80\xe1\x85\xa1 \xea\xb0\x80\xea\xb0\x81\xea\xb0\x82 ok"}) {
      check_continuations(tok, text);
    }
  }
}
