// GBNF grammars and JSON schemas from requests (core/grammar/): the input is a grammar (or,
// when it starts with '{', a JSON Schema), a NUL byte, then a text. A grammar that parses
// is run over the text byte by byte, and its token mask over a small vocabulary is checked
// against advancing each token on its own: the trie walk must agree with the plain matcher.
//
// One input makes up to 65 x 73 matcher calls, so each call gets a smaller budget than the
// server's and the input stops once its calls together pass kInputWork: an ambiguous grammar
// then exercises the "too ambiguous" refusal instead of reading as a hang.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/gbnf_grammar.hpp"
#include "grammar/grammar_matcher.hpp"
#include "grammar/json_schema_grammar.hpp"
#include "grammar/token_trie.hpp"

namespace {

constexpr uint64_t kCallWork = 1'000'000;
constexpr uint64_t kInputWork = 5'000'000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  std::string source = input.substr(0, split);
  const std::string text = split == std::string::npos ? "" : input.substr(split + 1);
  try {
    if (!source.empty() && source[0] == '{') {
      const nlohmann::json schema = nlohmann::json::parse(source, nullptr, false);
      if (schema.is_discarded()) return 0;
      source = specd::json_schema_gbnf(schema, "schema");
    }
    const specd::Grammar grammar = specd::parse_gbnf(source);
    specd::GrammarMatcher matcher(grammar, kCallWork);
    specd::GrammarState state = matcher.initial();
    uint64_t work = matcher.work_done();
    // Pieces: each byte of the text, each pair, and a few fixed ones (multi-byte included).
    std::vector<std::string> pieces = {"{", "\"", " ", "a", "\xC3\xA9", "\xC3", "\xA9", "ab"};
    for (size_t i = 0; i < text.size() && pieces.size() < 64; ++i) {
      pieces.push_back(text.substr(i, 1));
      if (i + 1 < text.size()) pieces.push_back(text.substr(i, 2));
    }
    const specd::TokenTrie trie(pieces);
    for (size_t i = 0; i <= text.size() && i < 64; ++i) {
      std::vector<uint8_t> allowed;
      matcher.allowed_tokens(state, trie, allowed);
      work += matcher.work_done();
      for (size_t t = 0; t < pieces.size(); ++t) {
        specd::GrammarState copy = state;
        const bool ok = matcher.advance(copy, pieces[t]);
        work += matcher.work_done();
        if (ok != (allowed[t] != 0)) std::abort();  // the trie walk disagrees
        if (work > kInputWork) return 0;
      }
      if (i == text.size() || !matcher.advance(state, text.substr(i, 1))) break;
    }
  } catch (const specd::GrammarError&) {
    // refused with a message: fine
  }
  return 0;
}
