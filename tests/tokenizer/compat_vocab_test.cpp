// llama.cpp's own tokenizer cases for real vocabularies (../shared/compat/vocab): every text of
// every ggml-vocab-*.gguf.inp must tokenize (no BOS/EOS, special tokens not parsed) to exactly
// the ids listed in the matching .out line.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_reader.hpp"
#include "test_paths.hpp"
#include "test_skip.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer_fixtures.hpp"
#include "writers/gguf_writer.hpp"

using namespace specd;

namespace {

const std::filesystem::path kVocabDir =
    std::filesystem::path(SPECD_SOURCE_DIR) / ".." / "shared" / "compat" / "vocab";

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The .inp file: texts, each followed by "\n__ggml_vocab_test__\n".
std::vector<std::string> read_texts(const std::filesystem::path& p) {
  const std::string all = read_all(p);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  for (size_t hit; (hit = all.find(sep, pos)) != std::string::npos; pos = hit + sep.size()) {
    texts.push_back(all.substr(pos, hit - pos));
  }
  REQUIRE_MESSAGE(pos == all.size(), p.string() << ": text after the last separator");
  return texts;
}

// The .out file: one line of space-prefixed ids per text.
std::vector<std::vector<int32_t>> read_ids(const std::filesystem::path& p) {
  std::istringstream in(read_all(p));
  std::vector<std::vector<int32_t>> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    int64_t id;
    while (ls >> id) ids.push_back(static_cast<int32_t>(id));
    REQUIRE_MESSAGE(ls.eof(), p.string() << ": line " << out.size() + 1 << " is not ids");
    out.push_back(std::move(ids));
  }
  return out;
}

std::string show_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

std::string show_text(const std::string& t) {
  std::string s;
  for (unsigned char c : t) {
    if (c == '\n') {
      s += "\\n";
    } else if (c == '\t') {
      s += "\\t";
    } else if (c == '\r') {
      s += "\\r";
    } else {
      s += static_cast<char>(c);
    }
  }
  return s;
}

// The vocabulary of a vocab-only file with tokenizer.ggml.pre set to `pre`.
Tokenizer with_pre(const std::filesystem::path& gguf, const std::string& pre) {
  const GgufFile file = GgufFile::open(gguf.string());
  REQUIRE(file.tensors().empty());
  GgufWriter w;
  for (const auto& [key, value] : file.metadata()) {
    if (key != "general.alignment") w.set(key, value);
  }
  w.set_string("tokenizer.ggml.pre", pre);
  const std::string path = test::tok_scratch("compat-" + pre + ".gguf");
  w.write(path);
  return test::load(path);
}

// Runs the cases of ggml-vocab-<name>.gguf; with `pre`, after setting tokenizer.ggml.pre to
// another name llama.cpp gives the same pattern list (the ids must not change).
void run_cases(const std::string& name, const std::string& pre = "") {
  const std::filesystem::path gguf = kVocabDir / ("ggml-vocab-" + name + ".gguf");
  if (!std::filesystem::exists(kVocabDir)) {
    ::specd::test::skip_missing(kVocabDir.string(), " is missing (llama.cpp reference data)");
    return;
  }
  const Tokenizer tok =
      pre.empty() ? Tokenizer::from_gguf(GgufFile::open(gguf.string())) : with_pre(gguf, pre);
  const std::string label = pre.empty() ? name : name + " (tokenizer.ggml.pre = " + pre + ")";
  const std::vector<std::string> texts = read_texts(gguf.string() + ".inp");
  const std::vector<std::vector<int32_t>> expected = read_ids(gguf.string() + ".out");
  REQUIRE_MESSAGE(texts.size() == expected.size(),
                  name << ": " << texts.size() << " texts but " << expected.size() << " id lines");
  REQUIRE(!texts.empty());
  size_t failed = 0;
  for (size_t k = 0; k < texts.size(); ++k) {
    const std::vector<int32_t> got = tok.encode(texts[k], false, false);
    if (got == expected[k]) continue;
    if (failed++ == 0) {
      FAIL_CHECK(label << " case " << k << " text '" << show_text(texts[k]) << "'\n  expected"
                       << show_ids(expected[k]) << "\n  got     " << show_ids(got));
    }
  }
  CHECK_MESSAGE(failed == 0, label << ": " << failed << " of " << texts.size() << " cases differ");
  // Byte-level BPE spells any bytes: every case decodes back to its text.
  if (tok.model() == TokenizerModel::kBpe) {
    for (const std::string& t : texts) CHECK(tok.decode(tok.encode(t, false, false)) == t);
  }
}

}  // namespace

TEST_CASE("compat vocab: gpt-neox (no tokenizer.ggml.pre) round-trips any text" * SPECD_MAY_SKIP) {
  const std::filesystem::path gguf = kVocabDir / "ggml-vocab-gpt-neox.gguf";
  if (!std::filesystem::exists(gguf)) {
    ::specd::test::skip_missing(gguf.string(), " is missing (llama.cpp reference data)");
    return;
  }
  const Tokenizer tok = Tokenizer::from_gguf(GgufFile::open(gguf.string()));
  for (const std::string& t : read_texts(kVocabDir / "ggml-vocab-gpt-2.gguf.inp")) {
    CHECK(tok.decode(tok.encode(t, false, false)) == t);
  }
}

TEST_CASE("compat vocab: gpt-2" * SPECD_MAY_SKIP) {
  run_cases("gpt-2");
}

TEST_CASE("compat vocab: llama-spm" * SPECD_MAY_SKIP) {
  run_cases("llama-spm");
}

TEST_CASE("compat vocab: phi-3" * SPECD_MAY_SKIP) {
  run_cases("phi-3");
}

TEST_CASE("compat vocab: deepseek-coder" * SPECD_MAY_SKIP) {
  run_cases("deepseek-coder");
}

TEST_CASE("compat vocab: falcon" * SPECD_MAY_SKIP) {
  run_cases("falcon");
}

TEST_CASE("compat vocab: starcoder" * SPECD_MAY_SKIP) {
  run_cases("starcoder");
}

// refact, command-r and smollm use starcoder's patterns; mpt, olmo and phi-2 GPT-2's; llama.cpp's
// cases for those vocabularies are therefore also theirs.
TEST_CASE("compat vocab: pre-tokenizer names that share a pattern list give the same ids" *
          SPECD_MAY_SKIP) {
  for (const char* pre : {"refact", "command-r", "smollm"}) run_cases("starcoder", pre);
  for (const char* pre : {"mpt", "olmo", "phi-2"}) run_cases("gpt-2", pre);
}
