#include <doctest/doctest.h>

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
